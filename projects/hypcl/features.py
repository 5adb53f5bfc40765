"""Setting "folder": frozen CLIP features computed elsewhere (the paper's scale), one file.

`<dir>/features.npz` holds train_f [n, d] and test_f [m, d] (float, image features), train_y [n]
and test_y [m] (int class ids 0..C-1) and text [C, d] (the class prompts' text features). Rows are
L2-normalized on load, as CLIP's are before a cosine.
"""

from __future__ import annotations

import pathlib

import numpy as np

from projects.hypcl.continual import Split
from shared.data.resolver import MissingDataError

FIELDS = ("train_f", "train_y", "test_f", "test_y", "text")


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)).astype(np.float32)


def load_features(directory: str | pathlib.Path) -> tuple[Split, Split, np.ndarray]:
    path = pathlib.Path(directory) / "features.npz"
    if not path.is_file():
        raise MissingDataError(f"{path} is missing: write {', '.join(FIELDS)} there (see "
                               "projects/hypcl/features.py) or set features_dir")  # fmt: skip
    data = np.load(path)
    missing = [f for f in FIELDS if f not in data]
    if missing:
        raise ValueError(f"{path}: arrays {missing} are missing (want {', '.join(FIELDS)})")
    text = data["text"]
    splits = []
    for name in ("train", "test"):
        f, y = data[f"{name}_f"], data[f"{name}_y"]
        if f.ndim != 2 or f.shape[1] != text.shape[1] or y.shape != (len(f),):
            raise ValueError(f"{path}: {name}_f {f.shape} and {name}_y {y.shape} must be [n, "
                             f"{text.shape[1]}] and [n] (text is {text.shape})")  # fmt: skip
        if len(y) and (y.min() < 0 or y.max() >= len(text)):
            raise ValueError(f"{path}: {name}_y must lie in 0..{len(text) - 1} (one text row "
                             "per class)")  # fmt: skip
        splits.append(Split(_unit(f), y.astype(np.int32)))
    return splits[0], splits[1], _unit(text)
