"""Rehearsal of the `paper` config (shared/rehearsal.py): a tiny DIV2K-style folder (train/ and
test/ PNG files) read through the real loader, the paper's scales (1 ... 32 on 128 x 128 crops)
with the tokenizer and transformer shrunk to a few steps.

    python launch/rehearse.py projects/var_sr
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.rehearsal import Rehearsal


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    import skimage.io

    root = directory / "div2k"
    rng = np.random.default_rng(0)
    for split, count in (("train", 2), ("test", 1)):
        (root / split).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            img = (rng.uniform(0, 1, (136, 144, 3)) * 255).astype(np.uint8)
            skimage.io.imsave(root / split / f"{i:04d}.png", img, check_contrast=False)
    return (f"data.image_dir={str(root)!r}",)


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    problems = []
    for name in ("systems", "tokenizers", "margins"):
        if not (run_dir / f"{name}.jsonl").exists():
            problems.append(f"no {name}.jsonl")
    if not problems:
        systems = {json.loads(x)["system"] for x in (run_dir / "systems.jsonl").read_text()
                   .splitlines()}  # fmt: skip
        want = {"bicubic", "var_sr", "hit"}
        problems += [f"system {s} missing" for s in sorted(want - systems)]
    return problems


REHEARSAL = Rehearsal(
    data="HR images in a local DIV2K-style folder (data.image_dir/train, data.image_dir/test)",
    write_data=write_data,
    shrink=(
        "num_seeds=1",
        "data.train_crops=4",
        "data.test_per_image=1",
        "tokenizer.vocab=16",
        "tokenizer.dim=4",
        "tokenizer.width=8",
        "tokenizer.steps=2",
        "tokenizer.batch_size=2",
        "transformer.dim=16",
        "transformer.depth=1",
        "transformer.heads=2",
        "transformer.steps=2",
        "transformer.batch_size=2",
        "dpo.steps=2",
        "dpo.betas=(0.1,)",
        "dpo.lams=(1.0,)",
    ),
    check=check,
)
