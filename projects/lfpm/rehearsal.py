"""Rehearsal of the `paper` config (shared/rehearsal.py): tiny task folders in the local layout
(`<data_dir>/<task>/{train,test}.npz`, x uint8 [n, H, W, 3], y int [n]) for the 8 task-arithmetic
tasks (2 of them merged, to keep compilation short), read through the real loader, with the
CLIP ViT-B/32-shaped encoder shrunk. Compilation dominates a rehearsal, so it runs the attack,
merge and defense of the paper's headline cell (BadMerging, TA, none vs LFPM path); the smoke
test runs every other cell.

    python launch/rehearse.py projects/lfpm
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from projects.lfpm.experiment import TA8
from shared.rehearsal import Rehearsal

SIDE, CLASSES = 16, 3


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    root = directory / "task_arithmetic8"
    rng = np.random.default_rng(0)
    for name in TA8:
        (root / name).mkdir(parents=True, exist_ok=True)
        for split, n in (("train", 40), ("test", 24)):
            x = rng.integers(0, 256, (n, SIDE, SIDE, 3), dtype=np.uint8)
            y = np.arange(n) % CLASSES
            np.savez(root / name / f"{split}.npz", x=x, y=y)
    return (f"data.data_dir={str(root)!r}",)


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    path = run_dir / "records.jsonl"
    if not path.exists():
        return ["no records.jsonl"]
    rows = [json.loads(x) for x in path.read_text().splitlines() if x]
    seen = {(r["attack"], r["merge"], r["defense"]) for r in rows}
    want = {("badmerging", m, d) for m in cfg.merge.methods for d in cfg.defense.defenses}
    problems = [f"records.jsonl lacks {w}" for w in sorted(want - seen)]
    if len({k for k in rows[0] if k.startswith("ca_")}) != len(cfg.data.tasks) + 1:
        problems.append("records.jsonl: not one CA column per task (+ mean)")
    for name in ("path.jsonl", "ctl.json"):
        if not (run_dir / name).exists():
            problems.append(f"no {name}")
    return problems


REHEARSAL = Rehearsal(
    data="8 task folders <data.data_dir>/<task>/{train,test}.npz (x uint8 [n, H, W, 3], "
    "y int [n]): SUN397, Cars, RESISC45, EuroSAT, SVHN, GTSRB, MNIST, DTD",
    write_data=write_data,
    shrink=(
        # 2 of the 8 written task folders: each task adds its terms to every defense's compiled
        # loss, and the loader reads all 8 layouts the same way
        "data.tasks=('sun397', 'cars')",
        "attack.variants=('badmerging',)",
        "merge.methods=('ta',)",
        "defense.defenses=('none', 'lfpm_path')",
        "data.clean_fraction=0.1",
        "data.pretrain_per_source=16",
        "encoder.patch=4",
        "encoder.width=16",
        "encoder.dim=8",
        "encoder.depth=1",
        "encoder.heads=2",
        "pretrain.steps=2",
        "pretrain.batch_size=16",
        "fine.steps=2",
        "fine.batch_size=8",
        "fine.head_steps=2",
        "attack.trigger_size=3",
        "figure.path_lam=1.0",  # each override is validated on its own: path_lam first
        "merge.lams=(1.0,)",
        "defense.steps=2",
        "defense.batch_size=2",
        "defense.path_points=2",
        "defense.defend=('badmerging',)",
        "figure.path_grid=3",
        "figure.ctl_probe=4",
        "figure.ctl_alphas=(0.0, 0.5, 1.0)",
    ),
    check=check,
)
