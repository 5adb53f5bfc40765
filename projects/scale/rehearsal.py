"""Rehearsal of the `paper` config (shared/rehearsal.py): the official 130M recipe (SCALE, bf16,
parameters replicated and batches split over a `data` mesh of 8 devices) on tiny local C4 shards
with a T5-style sentencepiece model, a one-block decoder, 3 steps, a checkpoint every step.

    python launch/rehearse.py projects/scale
"""

from __future__ import annotations

import pathlib

from shared.rehearsal import DEVICES, Rehearsal
from shared.rehearsal_c4 import t5_stand_in, write_shards

STEPS = 3


def write_c4(directory: pathlib.Path) -> tuple[str, ...]:
    return (f"data_dir={str(write_shards(directory / 'c4'))!r}",)


REHEARSAL = Rehearsal(
    data="C4 `en` JSON-lines shards and spiece.model from data_dir (shared.data.c4)",
    write_data=write_c4,
    shrink=(
        f"steps={STEPS}",
        "lr=0.01",  # a tiny model learns the skewed unigram within its first step
        f"batch_size={DEVICES}",
        "seq_len=32",
        "num_heads=2",  # before dim: each override is validated on its own
        "dim=16",
        "num_layers=1",
        "ffn_dim=32",
        "vocab_size=0",  # the tokenizer's (the paper's 32,000 is T5's own vocabulary)
        "eval_every=1",  # the LM trainer checkpoints at every evaluation point
        "eval_windows=8",
        "final_eval_windows=16",
    ),
    checkpoints={"lm": STEPS},
    mesh={"data": DEVICES},
    stand_in=t5_stand_in,
)
