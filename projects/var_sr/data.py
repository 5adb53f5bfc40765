"""Super-resolution pairs from real photographs that ship inside PyPI packages (no download).

Sources: scikit-image's bundled images (`shared.data.images.load_skimage_image`; grey images
replicated to RGB, the alpha channel of RGBA dropped) and scikit-learn's two sample photographs.
Four images are held out for testing. HR = 32 x 32 crops (random positions and flips for
training; a fixed grid for testing); LR = bicubic x4 with antialiasing
(`jax.image.resize(..., "bicubic", antialias=True)`) plus Gaussian noise sigma = 0.01, clipped
to [0, 1] (the clip is our choice: the images stay images).
"""

from __future__ import annotations

import functools
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

from shared.data.images import load_skimage_image
from shared.data.resolver import MissingDataError

TRAIN_IMAGES = ("astronaut", "rocket", "hubble_deep_field", "retina", "immunohistochemistry",
                "brick", "grass", "gravel", "moon", "coins", "text", "flower")  # fmt: skip
TEST_IMAGES = ("chelsea", "coffee", "camera", "china")
SKLEARN_PHOTOS = ("china", "flower")


def folder_images(directory: str | pathlib.Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A DIV2K-style local dataset: (train, test) image paths from <dir>/train and <dir>/test
    (.png, .jpg or .jpeg files, sorted)."""
    root = pathlib.Path(directory)
    out = []
    for split in ("train", "test"):
        files = sorted(str(f) for f in (root / split).glob("*")
                       if f.suffix.lower() in (".png", ".jpg", ".jpeg"))  # fmt: skip
        if not files:
            raise MissingDataError(f"no .png/.jpg images in {root / split}: put the HR images "
                                   "there (e.g. DIV2K_train_HR as train, DIV2K_valid_HR as "
                                   "test) or set data.image_dir")  # fmt: skip
        out.append(tuple(files))
    return out[0], out[1]


@functools.cache
def load_photo(name: str) -> np.ndarray:
    """A packaged photograph by name, or an image file by path: [H, W, 3] float32 in [0, 1]."""
    if pathlib.Path(name).suffix.lower() in (".png", ".jpg", ".jpeg"):
        import skimage.io
        import skimage.util

        img = skimage.util.img_as_float32(skimage.io.imread(name))
        img = img[..., None] if img.ndim == 2 else img
    elif name in SKLEARN_PHOTOS:
        img = sklearn_photo(name).astype(np.float32) / 255.0
    else:
        img = load_skimage_image(name)
    if img.shape[-1] == 1:
        img = np.repeat(img, 3, -1)
    img = np.ascontiguousarray(img[..., :3], np.float32)
    img.flags.writeable = False
    return img


def sklearn_photo(name: str) -> np.ndarray:
    """scikit-learn's sample photograph `name` ([H, W, 3] uint8), decoded by PIL from the installed
    package as `sklearn.datasets.load_sample_images` does, without importing scikit-learn (its
    imports cost seconds per process for one JPEG file)."""
    import importlib.util

    from PIL import Image

    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataError(f"the photograph {name!r} ships with scikit-learn: pip install "
                               "scikit-learn")  # fmt: skip
    path = pathlib.Path(spec.submodule_search_locations[0]) / "datasets" / "images" / f"{name}.jpg"
    with Image.open(path) as image:
        return np.asarray(image)


def random_crops(names, n: int, size: int, seed: int) -> np.ndarray:
    """n crops [n, size, size, 3]: an image drawn uniformly, a position, a left-right flip."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, size, size, 3), np.float32)
    for i in range(n):
        img = load_photo(names[rng.integers(len(names))])
        if min(img.shape[:2]) < size:
            raise ValueError(f"an image of {img.shape[:2]} is smaller than the {size} crop")
        y, x = rng.integers(img.shape[0] - size + 1), rng.integers(img.shape[1] - size + 1)
        crop = img[y : y + size, x : x + size]
        out[i] = crop[:, ::-1] if rng.random() < 0.5 else crop
    return out


def grid_crops(names, per_image: int, size: int) -> np.ndarray:
    """per_image crops of each image on a fixed, evenly spaced grid (test sets): [n, s, s, 3]."""
    out = []
    side = int(np.ceil(np.sqrt(per_image)))
    for name in names:
        img = load_photo(name)
        ys = np.linspace(0, img.shape[0] - size, side).astype(int)
        xs = np.linspace(0, img.shape[1] - size, side).astype(int)
        cells = [(y, x) for y in ys for x in xs][:per_image]
        out += [img[y : y + size, x : x + size] for y, x in cells]
    return np.stack(out)


def degrade(hr: jax.Array, key: jax.Array, scale: int = 4, noise: float = 0.01) -> jax.Array:
    """HR [n, H, W, 3] -> LR [n, H/scale, W/scale, 3]: antialiased bicubic + N(0, noise^2)."""
    n, h, w, c = hr.shape
    if h % scale or w % scale:
        raise ValueError(f"HR side {h}x{w} is not a multiple of scale={scale}")
    lr = jax.image.resize(hr, (n, h // scale, w // scale, c), "bicubic", antialias=True)
    return jnp.clip(lr + noise * jax.random.normal(key, lr.shape), 0.0, 1.0)
