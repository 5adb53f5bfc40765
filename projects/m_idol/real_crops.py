"""Unlabelled random crops of scikit-image's bundled medical-looking images (spec sec. 5).

`real_crops(n_per_image, seed)` returns `RealCrops(x, source)`:
  x:      [len(REAL_SOURCES) * n_per_image, size, size, 3] float32 in [0, 1]
  source: [len(REAL_SOURCES) * n_per_image] int32, index into REAL_SOURCES (source-major rows)

Crops keep the images' own values (no per-crop rescaling: microaneurysms spans ~0.15-0.51); grey
images are replicated to 3 channels and an alpha channel, if any, is dropped.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from shared.data.images import load_skimage_image

# What each stands in for: fundus, fundus, pathology-like stain, microscopy, CT-like phantom.
REAL_SOURCES = ("retina", "microaneurysms", "immunohistochemistry", "cell", "shepp_logan_phantom")


class RealCrops(NamedTuple):
    x: np.ndarray  # [n, size, size, 3] float32 in [0, 1]
    source: np.ndarray  # [n] int32, index into REAL_SOURCES


@functools.cache
def _rgb(name: str) -> np.ndarray:
    """The bundled image `name` as [H, W, 3] float32 in [0, 1] (read-only, cached)."""
    img = load_skimage_image(name)
    if img.shape[-1] == 1:
        img = np.repeat(img, 3, axis=-1)
    elif img.shape[-1] == 4:
        img = img[..., :3]
    img = np.ascontiguousarray(img, dtype=np.float32)
    img.flags.writeable = False
    return img


def real_crops(
    n_per_image: int, seed: int, size: int = 32, sources: tuple[str, ...] = REAL_SOURCES
) -> RealCrops:
    """n_per_image uniformly placed size x size crops of each image in `sources`, seeded.

    Image i's crop corners come from the stream (seed, i), so one image's crops do not depend on
    the others. An image smaller than the crop raises, naming it.
    """
    if n_per_image < 1 or size < 1:
        raise ValueError(f"need n_per_image >= 1 and size >= 1, got {n_per_image}, {size}")
    xs = []
    for i, name in enumerate(sources):
        img = _rgb(name)
        h, w = img.shape[:2]
        if h < size or w < size:
            raise ValueError(
                f"scikit-image's '{name}' is {h}x{w}, smaller than the {size}x{size} crop; "
                f"use a smaller size or drop '{name}' from sources"
            )
        rng = np.random.default_rng([seed, i])
        top = rng.integers(0, h - size + 1, n_per_image)
        left = rng.integers(0, w - size + 1, n_per_image)
        rows = top[:, None, None] + np.arange(size)[None, :, None]  # [n, size, 1]
        cols = left[:, None, None] + np.arange(size)[None, None, :]  # [n, 1, size]
        xs.append(img[rows, cols])
    source = np.repeat(np.arange(len(sources), dtype=np.int32), n_per_image)
    return RealCrops(np.concatenate(xs).astype(np.float32), source)
