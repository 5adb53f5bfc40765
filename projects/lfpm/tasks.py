"""The tasks that are fine-tuned and merged, the defender's clean set, and the trigger.

CPU tasks (source "mnist"): T1 = MNIST 10-way, T2 = Fashion-MNIST 10-way (the attacked task),
T3 = intensity-inverted MNIST, parity of the digit (2-way). Each task draws `train_per_task`
training and `test_per_task` test images with a seeded generator; the defender's clean set D_c is
the first `clean_fraction` of each task's (shuffled) training draw. Label-free pretraining reads
`pretrain_per_source` images from each source's val split (disjoint from every task's draw).

Paper tasks (source "local"): `<data_dir>/<task>/{train,test}.npz`, each with `x` uint8
[n, H, W, C] and `y` integer [n] (classes 0..k-1); read by `load_local_task`.
"""

from __future__ import annotations

import dataclasses
import pathlib

import jax.numpy as jnp
import numpy as np

from projects.lfpm.experiment import MNIST_TASKS
from shared.data.augment import add_trigger
from shared.data.images import load_fashion_mnist, load_mnist
from shared.data.resolver import MissingDataError


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    num_classes: int
    x_train: np.ndarray  # [n, H, W, C] float32 in [0, 1]
    y_train: np.ndarray  # [n] int32
    x_test: np.ndarray
    y_test: np.ndarray
    x_clean: np.ndarray  # D_c: the defender's clean share of the training draw
    y_clean: np.ndarray


def triggered(x: np.ndarray, size: int) -> np.ndarray:
    """x with the white size x size patch in the bottom-right corner (shared add_trigger)."""
    return np.asarray(add_trigger(jnp.asarray(x), size=size, value=1.0))


def _draw(x, y, n: int, rng: np.random.Generator, where: str) -> tuple[np.ndarray, np.ndarray]:
    if n > len(x):
        raise ValueError(f"{where}: {n} images asked, {len(x)} available")
    idx = rng.permutation(len(x))[:n]
    return np.ascontiguousarray(x[idx], np.float32), np.asarray(y[idx], np.int32)


def _task(name, k, train, test, clean_fraction: float) -> Task:
    n_clean = max(1, int(round(clean_fraction * len(train[0]))))
    return Task(name, k, *train, *test, train[0][:n_clean], train[1][:n_clean])


def mnist_tasks(
    seed: int, train_per_task: int, test_per_task: int, clean_fraction: float
) -> list[Task]:
    """T1, T2, T3 above; the draws depend on `seed`."""
    rng = np.random.default_rng([seed, 24])
    mnist, fashion = load_mnist(), load_fashion_mnist()
    tasks = []
    for name, source in zip(MNIST_TASKS, (mnist, fashion, mnist)):
        train = _draw(*source.train, train_per_task, rng, f"{name}/train")
        test = _draw(*source.test, test_per_task, rng, f"{name}/test")
        k = 10
        if name == "inv_parity":  # inverted intensities, label = digit parity
            train = (1 - train[0], train[1] % 2)
            test = (1 - test[0], test[1] % 2)
            k = 2
        tasks.append(_task(name, k, train, test, clean_fraction))
    return tasks


def mnist_pretrain_images(seed: int, per_source: int) -> np.ndarray:
    """Unlabelled images of MNIST's and Fashion-MNIST's val splits: [2 * per_source, 28, 28, 1]."""
    rng = np.random.default_rng([seed, 25])
    parts = [_draw(*s.val, per_source, rng, f"{s.name}/val")[0]
             for s in (load_mnist(), load_fashion_mnist())]  # fmt: skip
    return np.concatenate(parts)


def _read_npz(path: pathlib.Path) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise MissingDataError(
            f"{path} is missing: each task folder holds train.npz and test.npz with x uint8 "
            "[n, H, W, C] and y int [n] (set data.data_dir to the folder of task folders)"
        )
    with np.load(path) as f:
        if "x" not in f or "y" not in f:
            raise ValueError(f"{path}: needs arrays 'x' and 'y', has {sorted(f.files)}")
        x, y = f["x"], f["y"]
    if x.dtype != np.uint8 or x.ndim != 4:
        raise ValueError(f"{path}: x is {x.dtype}{x.shape}; save it as uint8 [n, H, W, C]")
    if not np.issubdtype(y.dtype, np.integer) or y.shape != (len(x),):
        raise ValueError(f"{path}: y is {y.dtype}{y.shape}; save one integer label per image")
    if len(y) and y.min() < 0:
        raise ValueError(f"{path}: y has negative labels; classes are 0..k-1")
    return (x / np.float32(255)).astype(np.float32), y.astype(np.int32)


def load_local_task(
    data_dir: str | pathlib.Path, name: str, train_n: int, test_n: int, clean_fraction: float,
    seed: int,
) -> Task:  # fmt: skip
    """One task of the local layout; draws at most train_n / test_n images (seeded)."""
    root = pathlib.Path(data_dir) / name
    (xtr, ytr), (xte, yte) = _read_npz(root / "train.npz"), _read_npz(root / "test.npz")
    if xtr.shape[1:] != xte.shape[1:]:
        raise ValueError(f"{root}: train images {xtr.shape[1:]} but test images {xte.shape[1:]}")
    rng = np.random.default_rng([seed, 26])
    train = _draw(xtr, ytr, min(train_n, len(xtr)), rng, f"{name}/train")
    test = _draw(xte, yte, min(test_n, len(xte)), rng, f"{name}/test")
    k = int(max(ytr.max(), yte.max())) + 1
    return _task(name, k, train, test, clean_fraction)
