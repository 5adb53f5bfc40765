"""Rehearsal of the `paper` config (shared/rehearsal.py): a tiny features.npz in the layout of
features.py (512-d, as CLIP ViT-B/16's), read through the real loader, zero-shot, HypCL-A
and HypCL-B run for two steps on each of two tasks (compilation dominates a rehearsal; the smoke
test runs every method and ablation).

    python launch/rehearse.py projects/hypcl
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.rehearsal import Rehearsal


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    rng = np.random.default_rng(0)
    classes, dim = 20, 512
    root = directory / "clip_features"
    root.mkdir(parents=True, exist_ok=True)
    means = rng.normal(size=(classes, dim)).astype(np.float32)
    arrays = {"text": means + 0.1 * rng.normal(size=means.shape)}
    for split, per_class in (("train", 6), ("test", 3)):
        y = np.repeat(np.arange(classes), per_class)
        arrays[f"{split}_f"] = means[y] + rng.normal(size=(len(y), dim))
        arrays[f"{split}_y"] = y
    np.savez(root / "features.npz", **arrays)
    return (f"features_dir={str(root)!r}",)


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    path = run_dir / "methods.jsonl"
    if not path.exists():
        return ["no methods.jsonl"]
    systems = {json.loads(line)["system"] for line in path.read_text().splitlines()}
    want = set(cfg.methods) | set(cfg.ablations)
    return [f"method {s} missing from methods.jsonl" for s in sorted(want - systems)]


REHEARSAL = Rehearsal(
    data="precomputed CLIP image and text features (features_dir/features.npz: train_f, "
    "train_y, test_f, test_y, text)",
    write_data=write_data,
    shrink=(
        "num_tasks=2",
        "methods=('zero_shot', 'hypcl_a', 'hypcl_b')",
        "ablations=()",
        "learner.steps_per_task=2",
        "learner.batch_size=8",
        "num_seeds=1",
    ),
    check=check,
)
