"""Rehearsal of the `paper` config (shared/rehearsal.py): the whole ConPress protocol on a
(data, model) = 2 x 4 mesh with FSDP + tensor sharding, reading the paper's layout: JSON-lines
question files (train pool, MATH500, AIME25), a Hugging Face tokenizer.json and the model's
orbax checkpoint, all tiny and written here.

    python launch/rehearse.py projects/conpress

A random model writes no "### Qi" marker and no correct answer, so no SFT pair would survive
and the SFT stages would never run. So the tiny model is first taught (60 steps, seconds) to
answer the rehearsal's questions, which all have the answer 1, in the requested format, and
more briefly under a 2-question prompt (pressure by construction): "The answer is \\boxed{1}"
alone, "\\boxed{1}" per segment. Then every filter keeps pairs, and each SFT variant trains
and checkpoints on the mesh.
"""

from __future__ import annotations

import json
import pathlib

from shared.rehearsal import Rehearsal, write_bpe_tokenizer

MESH = (2, 4)
TEMPLATE = "<s>User: {prompt}\nAssistant: "
SFT_STEPS = 2
VARIANTS = ("control", "conpress", "conpress_unfiltered", "conpress_length")


def _questions(count: int, offset: int) -> list[dict]:
    return [
        {"problem": f"What is {k + 2} - {k + 1}?", "answer": "1"}
        for k in range(offset, offset + count)
    ]


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    import jax
    import orbax.checkpoint as ocp
    from flax import nnx

    from projects.conpress.models import REHEARSAL_LAYOUT, checkpoint_backend
    from projects.conpress.prompts import build_prompt, join_answers
    from shared.models.llama import Llama
    from shared.train.sft import SFTConfig, pack_pairs, train_sft

    data = directory / "conpress"
    data.mkdir(parents=True, exist_ok=True)
    files = {"train.jsonl": _questions(8, 0), "math500.jsonl": _questions(4, 20),
             "aime25.jsonl": _questions(2, 40)}  # fmt: skip
    for name, rows in files.items():
        (data / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    questions = [r["problem"] for rows in files.values() for r in rows]
    pairs = [(build_prompt([q]), "The answer is \\boxed{1}") for q in questions]
    pairs += [
        (build_prompt(questions[i : i + 2]), join_answers(["\\boxed{1}"] * 2))
        for i in range(0, len(questions) - 1)
    ]
    tokenizer = directory / "tokenizer.json"
    write_bpe_tokenizer([TEMPLATE.format(prompt=p) + r for p, r in pairs], tokenizer, 384)

    # Teach a tiny model of the paper's layout to answer (on one device), then save it.
    model = Llama(REHEARSAL_LAYOUT, rngs=nnx.Rngs(jax.random.key(0)))
    weights = directory / "model"
    ckpt = ocp.StandardCheckpointer()
    ckpt.save(weights, nnx.state(model, nnx.Param))
    ckpt.wait_until_finished()
    backend = checkpoint_backend("rehearsal", str(weights), str(tokenizer), TEMPLATE, None)
    ids = [(backend.encode_prompt(p), backend.encode_text(r)) for p, r in pairs]
    packed = pack_pairs(ids, 96, eos_id=backend.eos_id, pad_id=backend.pad_id)
    teach = SFTConfig(steps=60, batch_size=8, lr=1e-2, warmup_fraction=0.05)
    train_sft(backend.model, packed, teach, checkpoints=False)
    ckpt.save(weights, nnx.state(backend.model, nnx.Param), force=True)
    ckpt.wait_until_finished()
    return (
        f"task.data_dir={str(data)!r}",
        f"model.init_checkpoint={str(weights)!r}",
        f"model.tokenizer_file={str(tokenizer)!r}",
        f"model.chat_template={TEMPLATE!r}",
    )


REHEARSAL = Rehearsal(
    data="JSON-lines question files (train pool, MATH500, AIME25) in task.data_dir, a Hugging "
    "Face tokenizer.json (model.tokenizer_file) and an orbax checkpoint of the model "
    "(model.init_checkpoint)",
    write_data=write_data,
    shrink=(
        "model.layout='rehearsal'",
        f"mesh_shape={MESH}",
        "ns=(1, 2)",  # before rn_questions: each override is validated on its own
        "rn_questions=4",
        "conpress_n=2",
        "task.pool_questions=8",
        "task.eval_questions=4",
        "task.hard_questions=2",
        "sampling.samples=1",
        "sampling.pool_samples=2",
        "sampling.max_new_per_question=24",
        "sampling.max_new_total=48",
        "sampling.batch_size=8",
        "sft.steps=2",
        "sft.batch_size=4",
        "sft_seq_len=96",
        "sft_examples=4",
    ),
    checkpoints={f"rep0_{v}": SFT_STEPS for v in VARIANTS},
    mesh={"data": MESH[0], "model": MESH[1]},
    sharded_axes=("data", "model"),
)
