"""Label-free pretraining lowers its loss for both objectives and refuses bad inputs."""

import jax
import numpy as np
import pytest
from flax import nnx

from shared.models.image_encoders import ConvEncoder
from shared.train.label_free import PretrainConfig, pretrain, target_logits


def _data(n=64):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, n)
    protos = rng.uniform(0, 1, (4, 8, 8, 1)).astype(np.float32)
    images = np.clip(protos[labels] + 0.05 * rng.normal(size=(n, 8, 8, 1)), 0, 1)
    return images.astype(np.float32), labels


def test_autoencoder_and_toy_clip_objectives_learn():
    images, labels = _data()
    targets = np.eye(4, 6, dtype=np.float32)
    runs = [("autoencoder", {}), ("targets", {"targets": targets, "labels": labels})]
    for objective, extra in runs:
        enc = ConvEncoder(8, 1, widths=(4, 8), dim=16, rngs=nnx.Rngs(0))
        after = pretrain(enc, images, PretrainConfig(objective, steps=150, batch_size=32,
                         lr=3e-3), jax.random.key(0), **extra)  # fmt: skip
        assert after["loss"] < 0.5 * after["first_loss"], (objective, after)
    # the toy CLIP classifies its training images by the nearest target
    logits = target_logits(enc(images), after["head"], targets, 0.07)
    assert np.mean(np.argmax(logits, 1) == labels) > 0.9


def test_targets_objective_needs_targets_and_valid_labels():
    images, labels = _data(8)
    enc = ConvEncoder(8, 1, widths=(4,), dim=4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="needs targets"):
        pretrain(enc, images, PretrainConfig("targets", steps=1), jax.random.key(0))
    with pytest.raises(ValueError, match="labels must lie in 0..1"):
        pretrain(enc, images, PretrainConfig("targets", steps=1), jax.random.key(0),
                 targets=np.eye(2, 3, dtype=np.float32), labels=labels + 5)  # fmt: skip
