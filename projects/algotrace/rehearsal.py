"""Rehearsal of the `paper` config (shared/rehearsal.py): the Llama-3-8B-layout decoder shrunk to
two narrow blocks, trained a few steps on the generated mixture, then both analyses.

    python launch/rehearse.py projects/algotrace
"""

from __future__ import annotations

from shared.rehearsal import Rehearsal

REHEARSAL = Rehearsal(
    data="the generated ICL + graph-navigation mixture (projects/algotrace/tasks.py)",
    shrink=(  # each override is validated on its own: the layers first, then the layout
        "primitives.cluster_layer=1",
        "primitives.inject_layer=1",
        "primitives.prompts=4",
        "primitives.vector_prompts=6",
        "primitives.max_new=16",
        "model.size=''",
        "model.dim=32",
        "model.num_layers=2",
        "model.num_heads=2",
        "model.ffn_dim=64",
        "model.seq_len=128",
        "model.max_seq_len=256",
        "train.steps=3",
        "train.batch_size=8",
        "train_sequences=200",
        "fv.mean_prompts=4",
        "fv.trials=3",
        "fv.top_heads=2",
        "fv.dev_prompts=3",
        "fv.eval_prompts=4",
    ),
)
