import gzip
import pathlib
import socket
import struct

import numpy as np
import pytest

from shared.data import images
from shared.data.resolver import MissingDataError


@pytest.fixture(scope="module")
def mnist():
    return images.load_mnist()


def test_mnist_shapes_range_and_labels(mnist):
    assert mnist.num_classes == 10 and mnist.image_shape == (28, 28, 1)
    for (x, y), n in zip((mnist.train, mnist.val, mnist.test), (50_000, 10_000, 10_000)):
        assert x.shape == (n, 28, 28, 1) and x.dtype == np.float32
        assert y.shape == (n,) and y.dtype == np.int32
        assert x.min() == 0.0 and x.max() == 1.0
        # byte/255 exactly: the stored byte/256 values were recovered without rounding error
        b = x[:500] * 255
        np.testing.assert_allclose(b, np.round(b), atol=1e-4)
        counts = np.bincount(y, minlength=10)
        assert counts.shape == (10,) and counts.min() > 0.08 * n and counts.max() < 0.12 * n
    assert list(mnist.train.y[:5]) == [5, 0, 4, 1, 9]  # the well-known first training digits
    assert list(mnist.test.y[:5]) == [7, 2, 1, 0, 4]


def test_mnist_pixels_are_laid_out_upright(mnist):
    """A wrong reshape of the 784 pixels would scatter ink into the border that MNIST leaves
    nearly empty (digits are centred in a 20x20 box), and a transposed one would lay the 1s flat:
    their mean image must be a tall, narrow stroke."""
    x, y = mnist.test
    x = x[..., 0]
    border = np.concatenate([x[:, :2].ravel(), x[:, -2:].ravel(), x[:, :, :2].ravel()])
    assert border.mean() < 0.01 < 0.2 < x[:, 10:18, 10:18].mean()
    one = x[y == 1].mean(0)
    assert (one.mean(1) > 0.1).sum() >= 15 and (one.mean(0) > 0.1).sum() <= 9


def test_mnist_is_cached_and_read_only(mnist):
    assert images.load_mnist() is mnist
    with pytest.raises(ValueError, match="read-only"):
        mnist.train.x[0, 0, 0, 0] = 0.5


def test_digits_split_is_stratified_seeded_and_scaled():
    d = images.load_digits(seed=0, val_fraction=0.15, test_fraction=0.15)
    sizes = [len(s.y) for s in (d.train, d.val, d.test)]
    assert sum(sizes) == 1797 and d.image_shape == (8, 8, 1)
    assert abs(sizes[1] - 0.15 * 1797) < 10 and abs(sizes[2] - 0.15 * 1797) < 10
    for x, y in (d.train, d.val, d.test):
        assert set(np.unique(y)) == set(range(10))
        assert x.dtype == np.float32 and x.min() == 0.0 and x.max() == 1.0
    again, other = images.load_digits(seed=0), images.load_digits(seed=1)
    assert np.array_equal(d.val.x, again.val.x) and np.array_equal(d.test.y, again.test.y)
    assert not np.array_equal(d.val.x, other.val.x)
    with pytest.raises(ValueError, match="sum to less than 1"):
        images.load_digits(val_fraction=0.5, test_fraction=0.5)


def test_digits_splits_partition_the_sklearn_set():
    """Train, val and test together hold every sklearn image exactly once (as a multiset)."""
    import sklearn.datasets

    raw = sklearn.datasets.load_digits()
    d = images.load_digits(seed=3)
    ours = np.concatenate([s.x for s in (d.train, d.val, d.test)])[..., 0] * 16
    keys = lambda a: sorted(map(bytes, np.rint(a).astype(np.uint8).reshape(len(a), -1)))
    assert keys(ours) == keys(raw.images)


def test_skimage_bundled_images_load_without_network(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("a bundled image tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    names = images.skimage_images()
    assert {"astronaut", "camera", "retina", "immunohistochemistry", "cell"} <= set(names)
    for name in names:
        img = images.load_skimage_image(name)
        assert img.dtype == np.float32 and img.ndim == 3, name
        assert img.shape[2] in (1, 3, 4) and min(img.shape[:2]) >= 100, (name, img.shape)
        assert 0 <= img.min() < img.max() <= 1, name
    assert images.load_skimage_image("camera").shape == (512, 512, 1)
    assert images.load_skimage_image("astronaut").shape == (512, 512, 3)


@pytest.mark.parametrize("name", ["brain", "eagle", "kidney", "cells3d", "lfw_subset", "nope"])
def test_skimage_names_that_need_a_download_fail_with_the_list(name):
    with pytest.raises(ValueError, match="choose one of astronaut, brick, camera"):
        images.load_skimage_image(name)


def test_skimage_list_matches_the_files_in_the_wheel():
    """Every skimage.data image whose file the package ships is listed, and no other one."""
    import skimage.data
    from skimage.data._registry import registry

    shipped = {p.name for p in pathlib.Path(skimage.data.__file__).parent.iterdir()}
    listed = set(images._SKIMAGE_FILES.values())
    assert listed <= shipped
    downloads = {k.removeprefix("data/") for k in registry if k.startswith("data/")} - shipped
    assert {"brain.tiff", "eagle.png", "kidney.tif", "cells3d.tif"} <= downloads


# ---------------------------------------------------------------------------------------------
# Fashion-MNIST: tiny IDX files written here, in the layout of the Debian package
def _write_idx(path: pathlib.Path, a: np.ndarray, magic: int | None = None) -> None:
    magic = (0x0800 | a.ndim) if magic is None else magic
    header = struct.pack(f">I{a.ndim}I", magic, *a.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + a.astype(np.uint8).tobytes())


def _write_fashion(root: pathlib.Path, n_train: int = 20, n_test: int = 10) -> dict:
    rng = np.random.default_rng(0)
    raw = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = (np.arange(n) % 10).astype(np.uint8)
        _write_idx(root / f"{split}-images-idx3-ubyte.gz", x)
        _write_idx(root / f"{split}-labels-idx1-ubyte.gz", y)
        raw[split] = (x, y)
    return raw


def test_idx_parser_round_trips(tmp_path):
    x = np.random.default_rng(1).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    _write_idx(tmp_path / "x.gz", x)
    _write_idx(tmp_path / "y.gz", np.arange(5, dtype=np.uint8))
    got = images.read_idx(tmp_path / "x.gz", images.IDX_IMAGES)
    assert got.dtype == np.uint8 and np.array_equal(got, x)
    assert list(images.read_idx(tmp_path / "y.gz", images.IDX_LABELS)) == [0, 1, 2, 3, 4]
    (tmp_path / "raw").write_bytes(struct.pack(">II", 0x801, 2) + b"\x07\x03")
    assert list(images.read_idx(tmp_path / "raw", images.IDX_LABELS)) == [7, 3]


def test_idx_parser_rejects_bad_files(tmp_path):
    x = np.zeros((5, 28, 28), np.uint8)
    _write_idx(tmp_path / "swapped.gz", x, magic=images.IDX_LABELS)
    with pytest.raises(ValueError, match=r"swapped.gz: IDX magic .* 0x00000803, got 0x00000801"):
        images.read_idx(tmp_path / "swapped.gz", images.IDX_IMAGES)
    with gzip.open(tmp_path / "short.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, 5, 28, 28) + bytes(28 * 28 * 4))  # one image short
    with pytest.raises(ValueError, match=r"short.gz: dims \(5, 28, 28\) need 3920 bytes"):
        images.read_idx(tmp_path / "short.gz", images.IDX_IMAGES)
    good = gzip.compress(struct.pack(">II", 0x801, 3) + b"\x01\x02\x03")
    (tmp_path / "cut.gz").write_bytes(good[:-6])  # the gzip stream itself is cut off
    with pytest.raises(ValueError, match="cut.gz: cannot be read"):
        images.read_idx(tmp_path / "cut.gz", images.IDX_LABELS)


def test_fashion_mnist_loads_idx_files_exactly(tmp_path):
    raw = _write_fashion(tmp_path)
    f = images.load_fashion_mnist(tmp_path, seed=0, val_fraction=0.5)
    assert f.num_classes == 10 and f.class_names[9] == "Ankle boot"
    assert (len(f.train.y), len(f.val.y), len(f.test.y)) == (10, 10, 10)
    assert set(f.val.y) == set(range(10))  # one of each class's two images
    np.testing.assert_array_equal(f.test.x[..., 0] * 255, raw["t10k"][0].astype(np.float32))
    # train + val partition the training file, each image with its own label
    x_tr, y_tr = raw["train"]
    got = {bytes(np.rint(x[..., 0] * 255).astype(np.uint8)): int(y) for x, y in zip(*f.train)}
    got.update({bytes(np.rint(x[..., 0] * 255).astype(np.uint8)): int(y) for x, y in zip(*f.val)})
    assert got == {bytes(x): int(y) for x, y in zip(x_tr, y_tr)}
    again = images.load_fashion_mnist(tmp_path, seed=0, val_fraction=0.5)
    other = images.load_fashion_mnist(tmp_path, seed=5, val_fraction=0.5)
    assert np.array_equal(again.val.x, f.val.x) and not np.array_equal(other.val.x, f.val.x)


def test_fashion_mnist_root_from_env_and_label_count_check(tmp_path, monkeypatch):
    _write_fashion(tmp_path)
    monkeypatch.setenv("FASHION_MNIST_DIR", str(tmp_path))
    assert len(images.load_fashion_mnist(val_fraction=0.5).test.y) == 10
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(9, np.uint8))
    with pytest.raises(ValueError, match="10 images in t10k-images.* but 9 labels"):
        images.load_fashion_mnist()


def test_fashion_mnist_missing_files_say_how_to_get_them(tmp_path, monkeypatch):
    monkeypatch.delenv("FASHION_MNIST_DIR", raising=False)
    with pytest.raises(MissingDataError, match="apt-get download dataset-fashion-mnist") as e:
        images.load_fashion_mnist(tmp_path / "nowhere")
    assert "FASHION_MNIST_DIR=" in str(e.value) and "train-images-idx3-ubyte.gz" in str(e.value)


def test_real_fashion_mnist_if_installed():
    root = images.fashion_mnist_dir()
    if not (root / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"Fashion-MNIST IDX files not found in {root}: run `make env`")
    f = images.load_fashion_mnist(root)
    assert [len(s.y) for s in (f.train, f.val, f.test)] == [50_000, 10_000, 10_000]
    for s, per_class in ((f.train, 5000), (f.val, 1000), (f.test, 1000)):
        assert np.array_equal(np.bincount(s.y, minlength=10), np.full(10, per_class))
    assert f.image_shape == (28, 28, 1) and f.test.y[0] == 9 and f.train.x.max() == 1.0


def test_debian_data_dir_prefers_the_checkout_and_names_the_fix(tmp_path, monkeypatch):
    from shared.data import resolver

    monkeypatch.setattr(resolver, "DEBIAN_DATA_ROOT", tmp_path)
    sub = resolver.DEBIAN_PACKAGES["dataset-fashion-mnist"][0]
    if not (pathlib.Path("/") / sub).is_dir():  # no system copy: the checkout path, absent
        assert resolver.debian_data_dir("dataset-fashion-mnist") == tmp_path / sub
    (tmp_path / sub).mkdir(parents=True)
    assert resolver.debian_data_dir("dataset-fashion-mnist") == tmp_path / sub
    hint = resolver.debian_hint("r-cran-dslabs")
    assert "make env" in hint and "apt-get download r-cran-dslabs" in hint
