"""Rehearsal of the `paper` config (shared/rehearsal.py): every problem of the paper config
(chains, ICU-Sepsis from its package, the cancer simulator) and the full regime map, with 4
repetitions of 8 and 16 trajectories. NumPy on one process; a preempted run restarts the problem
it was in (`preemption.check` between problems, no orbax checkpoints).

    python launch/rehearse.py projects/shaped_ope
"""

from __future__ import annotations

import pathlib

from shared.rehearsal import Rehearsal


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    return [f"no {n}" for n in ("estimates.npz", "summary.json") if not (run_dir / n).exists()]


REHEARSAL = Rehearsal(
    data="ICU-Sepsis MDP, packaged (icu-sepsis); chains and the cancer simulator generated",
    shrink=(
        "reps=4",
        "ns=(8, 16)",
        "icu_horizon=3",
        "cancer_truth_rollouts=500",
        "regime_reps=4",
        "regime_n=8",
    ),
    check=check,
)
