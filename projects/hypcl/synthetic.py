"""Setting 1: synthetic hierarchical "CLIP features" (the spec's suggested generator).

100 classes = 20 superclasses x 5 subclasses in d = 64: mu_super ~ N(0, I), mu_c = mu_super +
spread * eps, features = mu_c + noise * N(0, I), L2-normalized; the "text embedding" of a class is
its mean plus text_noise * N(0, I), L2-normalized. The data are fixed by `data_seed`; the seeds of
a table vary the class order and the adapters' training.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from projects.hypcl.continual import Split


@dataclasses.dataclass(frozen=True)
class SyntheticConfig:
    superclasses: int = 20
    subclasses: int = 5  # per superclass
    dim: int = 64
    spread: float = 0.3  # subclass means around their superclass mean (spec: 0.3)
    noise: float = 0.5  # per-dimension feature noise (spec: 0.5)
    text_noise: float = 0.1  # per-dimension noise of the text anchors (spec: 0.1)
    train_per_class: int = 500
    test_per_class: int = 100
    data_seed: int = 0


def _unit(x):
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def make_features(cfg: SyntheticConfig) -> tuple[Split, Split, np.ndarray]:
    """(train, test, text [C, d]) with class c = superclass (c // subclasses)."""
    rng = np.random.default_rng(cfg.data_seed)
    sup = rng.normal(size=(cfg.superclasses, cfg.dim))
    means = np.repeat(sup, cfg.subclasses, 0)
    means = means + cfg.spread * rng.normal(size=means.shape)
    text = _unit(means + cfg.text_noise * rng.normal(size=means.shape))

    def split(per_class):
        y = np.repeat(np.arange(len(means)), per_class).astype(np.int32)
        return Split(_unit(means[y] + cfg.noise * rng.normal(size=(len(y), cfg.dim))), y)

    return split(cfg.train_per_class), split(cfg.test_per_class), text
