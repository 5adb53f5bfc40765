"""Rehearsal of the `paper` config (shared/rehearsal.py): continued pretraining with Attn-QAT
through the Pallas FP4 kernels (interpret mode on CPU), FSDP + tensor parallel over a 2 x 4
(data, model) mesh for the paper's 16 x 8, on tiny local C4 shards, starting from an orbax
checkpoint of the 70B's layout shrunk (`model.rehearsal`), 3 steps, a checkpoint every step.

    python launch/rehearse.py projects/attn_qat
"""

from __future__ import annotations

import dataclasses
import pathlib

from shared.rehearsal import Rehearsal
from shared.rehearsal_c4 import write_shards

STEPS, SEQ_LEN, MESH = 3, 32, (2, 4)


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    """C4 shards, and the starting weights as the orbax checkpoint `model.init_checkpoint`
    names (what a pod run restores Llama-3.1-70B from)."""
    import jax
    import orbax.checkpoint as ocp
    from flax import nnx

    from projects.attn_qat.model import LLAMA31_70B_REHEARSAL
    from shared.models.llama import Llama

    c4_dir = write_shards(directory / "c4")
    cfg = dataclasses.replace(LLAMA31_70B_REHEARSAL, attention="attn_qat")
    params = nnx.state(Llama(cfg, rngs=nnx.Rngs(jax.random.key(0))), nnx.Param)
    weights = directory / "init_checkpoint"
    ckpt = ocp.StandardCheckpointer()
    ckpt.save(weights, params)
    ckpt.wait_until_finished()
    return (f"data.data_dir={str(c4_dir)!r}", f"model.init_checkpoint={str(weights)!r}")


REHEARSAL = Rehearsal(
    data="C4 `en` JSON-lines shards from data.data_dir (bytes), weights from model.init_checkpoint",
    write_data=write_data,
    shrink=(
        "model.rehearsal=True",
        f"mesh_shape={MESH}",
        f"data.seq_len={SEQ_LEN}",
        f"data.eval_tokens={SEQ_LEN * 4}",
        "data.eval_batch=4",
        "finetune.warmup_steps=1",  # before steps: each override is validated on its own
        f"finetune.steps={STEPS}",
        "finetune.batch_size=4",
        "finetune.checkpoint_every=1",
    ),
    checkpoints={"finetune_attn_qat": STEPS},
    mesh={"data": MESH[0], "model": MESH[1]},
    sharded_axes=("data", "model"),
)
