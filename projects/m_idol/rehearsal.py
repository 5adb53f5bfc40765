"""Rehearsal of the `paper` config (shared/rehearsal.py): tiny PNG folders in the layout of
data.py (pretrain/<modality>/, eval/<modality>/<class>/), read through the real loader (resized
to the shrunk image size), with the ViT-B/16-shaped encoder and the heads shrunk; DINO and the
full M-IDoL variant, two steps each, checkpointed.

    python launch/rehearse.py projects/m_idol
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from projects.m_idol.generator import MODALITIES
from shared.rehearsal import Rehearsal

SIDE = 40  # written images are 40 x 40: the loader must resize them to model.image_size
VARIANTS = ("dino", "full")


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    from PIL import Image

    root = directory / "m_idol"
    rng = np.random.default_rng(0)
    for m, name in enumerate(MODALITIES):
        folders = [(root / "pretrain" / name, 8)]
        folders += [(root / "eval" / name / f"class{c}", 6) for c in range(2)]
        for folder, n in folders:
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(n):
                img = rng.integers(0, 256, (SIDE, SIDE, 3), dtype=np.uint8)
                img[..., m % 3] //= 2  # a faint per-modality cast
                Image.fromarray(img).save(folder / f"{i}.png")
    return (f"data.data_dir={str(root)!r}",)


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    path = run_dir / "records.jsonl"
    if not path.exists():
        return ["no records.jsonl"]
    rows = [json.loads(x) for x in path.read_text().splitlines() if x]
    problems = [f"records.jsonl lacks variant {v}" for v in cfg.variants
                if v not in {r["variant"] for r in rows}]  # fmt: skip
    if rows and rows[0]["eval"] != 5 * 2 * 6:
        problems.append(f"the evaluation set has {rows[0]['eval']} images, 60 were written")
    return problems


REHEARSAL = Rehearsal(
    data="images by modality in a local directory: <data.data_dir>/pretrain/<modality>/*.png "
    "(unlabelled) and <data.data_dir>/eval/<modality>/<class>/*.png (labelled), modalities "
    f"{', '.join(MODALITIES)}",
    write_data=write_data,
    shrink=(
        f"variants={VARIANTS!r}",
        "model.image_size=32",
        "crops.local_size=16",
        "crops.local_views=2",
        "model.patch=8",
        "model.width=16",
        "model.depth=1",
        "model.heads=2",
        "model.subspace=4",  # before dim: each override is validated on its own
        "model.dim=20",
        "model.hidden=16",
        "model.bottleneck=8",
        "model.prototypes=32",
        "train.steps=2",
        "train.batch_size=8",
        "train.warmup_steps=1",
        "train.checkpoint_every=1",
        "train.log_every=1",
        "train.fast_compile=True",
        "probe_cs=(1.0,)",
    ),
    checkpoints={f"{v}_seed0": 2 for v in VARIANTS},
    check=check,
)
