"""Setting 2: MNIST + Fashion-MNIST (20 classes) seen through a toy CLIP.

The text tower is the real all-MiniLM-L6-v2 (frozen) embedding one prompt per class. The image
tower is a small CNN (shared/models/image_encoders.py) trained contrastively against those frozen
prompt embeddings (shared/train/label_free.py, objective "targets") on a disjoint pretraining
share of every class, then frozen; its projected, L2-normalized output is the "CLIP image
feature" the continual learners adapt. Pretraining uses `data_seed`, not the run seed: the toy
CLIP plays the fixed pretrained model, and the seeds vary the class order and the adapters.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.hypcl.continual import Split
from shared.data.images import FASHION_NAMES, load_fashion_mnist, load_mnist
from shared.models.image_encoders import ConvEncoder
from shared.train.label_free import PretrainConfig, pretrain

DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def prompts() -> tuple[str, ...]:
    """One prompt per class: digits 0-9 are classes 0-9, Fashion-MNIST's 10 are 10-19."""
    digits = tuple(f"a handwritten digit {w}" for w in DIGIT_WORDS)
    return digits + tuple(f"a photo of a {n.lower()}" for n in FASHION_NAMES)


@dataclasses.dataclass(frozen=True)
class ToyClipConfig:
    train_per_class: int = 1000  # images per class drawn from the training splits
    test_per_class: int = 200  # test images per class (official test splits)
    pretrain_fraction: float = 0.2  # share of each class's images that pretrains the toy CLIP
    widths: tuple[int, ...] = (16, 32)  # CNN channels (stride 2 after the first)
    dim: int = 64  # CNN feature width before the projection to the text space
    pretrain: PretrainConfig = PretrainConfig(
        objective="targets", steps=400, batch_size=128, lr=1e-3, crop_pad=1
    )
    data_seed: int = 0


def _images(cfg: ToyClipConfig):
    rng = np.random.default_rng(cfg.data_seed)
    xs = {"train": [], "test": []}
    ys = {"train": [], "test": []}
    for offset, splits in ((0, load_mnist()), (10, load_fashion_mnist(seed=cfg.data_seed))):
        for name, per_class in (("train", cfg.train_per_class), ("test", cfg.test_per_class)):
            x, y = getattr(splits, name)
            for c in range(10):
                idx = rng.choice(np.flatnonzero(y == c), per_class, replace=False)
                xs[name].append(x[idx])
                ys[name].append(np.full(per_class, offset + c, np.int32))
    return ({k: np.concatenate(v) for k, v in xs.items()},
            {k: np.concatenate(v) for k, v in ys.items()})  # fmt: skip


def make_features(cfg: ToyClipConfig, text: np.ndarray) -> tuple[Split, Split, dict]:
    """text [20, d_t] prompt embeddings -> (continual train split, test split, info): features
    [n, d_t] of the frozen toy CLIP. The pretraining share of each class is not in `train`."""
    xs, ys = _images(cfg)
    rng = np.random.default_rng(cfg.data_seed + 1)
    pre = np.zeros(len(ys["train"]), bool)
    for c in np.unique(ys["train"]):
        idx = np.flatnonzero(ys["train"] == c)
        pre[rng.choice(idx, int(round(cfg.pretrain_fraction * len(idx))), replace=False)] = True
    key = jax.random.key(cfg.data_seed)
    enc = ConvEncoder(28, 1, cfg.widths, cfg.dim, rngs=nnx.Rngs(key))
    out = pretrain(enc, xs["train"][pre], cfg.pretrain, jax.random.fold_in(key, 1),
                   targets=text, labels=ys["train"][pre])  # fmt: skip
    head = out["head"]

    @jax.jit
    def embed(x):
        z = head(enc(x))
        return z / jnp.linalg.norm(z, axis=-1, keepdims=True)

    def features(x):
        return np.concatenate([np.asarray(embed(x[i : i + 1000])) for i in range(0, len(x), 1000)])

    train = Split(features(xs["train"][~pre]), ys["train"][~pre])
    test = Split(features(xs["test"]), ys["test"])
    zero_shot = float(np.mean(np.argmax(test.f @ text.T, 1) == test.y))
    return train, test, {"pretrain_loss": out["loss"], "pretrain_images": int(pre.sum()),
                         "toy_clip_zero_shot_acc": zero_shot}  # fmt: skip
