"""Rehearsal of the `paper` config (shared/rehearsal.py): T-JEPA's jannis setup on a 256-row
jannis.csv in the layout `shared.data.tabular_files` reads (54 numerical columns and a 4-class
`target`), a tiny encoder and predictor, 3 pretraining steps of T-JEPA and Var-T-JEPA
data-parallel over 8 devices, a checkpoint every step, then their probes.

    python launch/rehearse.py projects/var_jepa
"""

from __future__ import annotations

import pathlib

import numpy as np

from shared.rehearsal import DEVICES, Rehearsal

ROWS, FEATURES, CLASSES = 256, 54, 4  # jannis: 83,733 x 54, 4 classes
STEPS = 3


def write_jannis(directory: pathlib.Path) -> tuple[str, ...]:
    """jannis.csv: a header `V1..V54,target`, float features, integer classes."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(ROWS, FEATURES))
    y = (x[:, :CLASSES].argmax(1) + (rng.random(ROWS) < 0.1)) % CLASSES
    header = ",".join([*(f"V{j + 1}" for j in range(FEATURES)), "target"])
    rows = [",".join([*(f"{v:.5f}" for v in r), str(c)]) for r, c in zip(x, y)]
    (directory / "jannis.csv").write_text("\n".join([header, *rows]) + "\n")
    return (f"data.data_dir={str(directory)!r}",)


# probe heads: two short rounds each (the heads' own tests cover their early stopping)
_HEAD = ("max_rounds=2", "patience=1", "batch_size=64", "min_steps_per_round=2")

REHEARSAL = Rehearsal(
    data="csv:jannis from data.data_dir (T-JEPA's jannis table as CSV)",
    write_data=write_jannis,
    shrink=(
        # the raw-feature baselines (heads, GBDT) do not change with the model's scale
        "methods=('tjepa', 'var_tjepa')",
        "model.hidden_dim=8",
        "model.num_layers=1",
        "model.ff_dim=16",
        "model.pred_dim=8",
        "model.pred_layers=1",
        "model.pred_heads=2",
        "model.pred_ff_dim=16",
        f"pretrain.steps={STEPS}",
        f"pretrain.batch_size={2 * DEVICES}",
        "pretrain.warmup_steps=1",
        "pretrain.checkpoint_every=1",
        "pretrain.log_every=1",
        "pretrain.size_buckets=1",
        "probe.mlp.hidden=(16,)",
        *(f"probe.{head}.{kv}" for head in ("linear", "mlp") for kv in _HEAD),
    ),
    checkpoints={"tjepa": STEPS, "var_tjepa": STEPS},
    mesh={"data": DEVICES},
)
