"""Rehearsal of the `paper` config (shared/rehearsal.py): both generated graph families (the
paper's QM7 has no loader here), the resolvent model trained on the fine, coarse and mixed
resolutions and tested on both, the gap curves incl. the large grid, on 20 small graphs per
family, 3 layers of width 8, 2 epochs. One device; a preempted run restarts the training it was
in (`preemption.check` between trainings, no orbax checkpoints).

    python launch/rehearse.py projects/scale_continuous_gnn
"""

from __future__ import annotations

import pathlib

from shared.rehearsal import Rehearsal


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    return [f"no gaps_{f}.json" for f in cfg.families if not (run_dir / f"gaps_{f}.json").exists()]


REHEARSAL = Rehearsal(
    data="generated molecule-like graphs and grids (as the paper config)",
    shrink=(
        # each model is one more compilation per family and resolution; all have unit tests
        "models=('resolvent',)",
        "gap_lams=(1.0, 100.0, 10000.0)",
        "gap_graphs=4",
        "large_grid=8",
        "molecules.num_graphs=20",
        "molecules.heavy_range=(3, 5)",
        "grids.num_graphs=20",
        "grids.grid_sides=(4,)",
        "train.width=8",
        "train.epochs=2",
        "train.batch_size=8",
        "train.epochs_per_call=1",
    ),
    check=check,
)
