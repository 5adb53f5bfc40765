"""Rehearsal of the `paper` config (shared/rehearsal.py): every MRP (Garnet generated,
ICU-Sepsis from its package), both sampling regimes and every schedule of the grid, with
horizons of 20 and 100 and 2 + 2 seeds for the paper's 1e3..1e6 and 20 + 100. One jitted scan
per cell on one device; a preempted run restarts the cell it was in (`preemption.check` between
cells, no orbax checkpoints).

    python launch/rehearse.py projects/td_exp_step
"""

from __future__ import annotations

import pathlib

from shared.rehearsal import Rehearsal


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    names = ("errors.npz", "schedules.json", "problems.json", "summary.json")
    return [f"no {n}" for n in names if not (run_dir / n).exists()]


REHEARSAL = Rehearsal(
    data="ICU-Sepsis MDP, packaged (icu-sepsis); Garnet MRPs generated",
    shrink=("horizons=(20, 100)", "num_tune_seeds=2", "num_eval_seeds=2"),
    check=check,
)
