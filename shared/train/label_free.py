"""Label-free pretraining of an image encoder (shared/models/image_encoders.py).

- objective "autoencoder": a linear decoder maps the feature back to the pixels (through a
  sigmoid); the loss is the mean squared reconstruction error. No labels are read.
- objective "targets": a toy CLIP. A bias-free projection maps the feature to the space of given,
  frozen target embeddings (e.g. text embeddings of class prompts); with both sides L2-normalized,
  the loss is the cross-entropy of the image against every target, at a fixed temperature: CLIP's
  image-to-text loss with the class prompts as the text batch.

`pretrain` trains the encoder in place and returns the final loss and the auxiliary head (the
decoder, or the projection a toy CLIP keeps as its image tower's last layer).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared.config import NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.augment import augment


@dataclasses.dataclass(frozen=True)
class PretrainConfig:
    objective: Literal["autoencoder", "targets"] = "autoencoder"
    steps: PositiveInt = 500  # Adam steps
    batch_size: PositiveInt = 128
    lr: PositiveFloat = 1e-3
    temperature: PositiveFloat = 0.07  # "targets": CLIP's initial temperature
    crop_pad: NonNegativeInt = 0  # random shifts of up to this many pixels (0: none)


class _Decoder(nnx.Module):
    def __init__(self, dim: int, image_shape: tuple[int, int, int], *, rngs: nnx.Rngs):
        self.out = nnx.Linear(dim, int(np.prod(image_shape)), rngs=rngs)
        self.image_shape = image_shape

    def __call__(self, z: jax.Array) -> jax.Array:
        return nnx.sigmoid(self.out(z)).reshape(z.shape[0], *self.image_shape)


def _normalize(v: jax.Array) -> jax.Array:
    return v / jnp.maximum(jnp.linalg.norm(v, axis=-1, keepdims=True), 1e-12)


def target_logits(
    features: jax.Array, projection: nnx.Linear, targets: jax.Array, temperature: float
) -> jax.Array:
    """features [b, dim], targets [k, d_t] -> cosine-similarity logits [b, k] / temperature."""
    return _normalize(projection(features)) @ _normalize(targets).T / temperature


def pretrain(
    encoder: nnx.Module,
    images: np.ndarray,
    cfg: PretrainConfig,
    key: jax.Array,
    targets: np.ndarray | None = None,
    labels: np.ndarray | None = None,
) -> dict:
    """images [n, H, W, C] in [0, 1]; "targets" also needs targets [k, d_t] and labels [n] in
    0..k-1. Trains `encoder` in place; returns {"loss": the last step's, "first_loss": the first
    step's (initial parameters), "head": decoder or projection}."""
    init_key, data_key = jax.random.split(key)
    if cfg.objective == "targets":
        if targets is None or labels is None or len(labels) != len(images):
            raise ValueError("objective='targets' needs targets [k, d_t] and one label per image")
        if labels.min() < 0 or labels.max() >= len(targets):
            raise ValueError(f"labels must lie in 0..{len(targets) - 1} (one target per class)")
        head = nnx.Linear(encoder.dim, targets.shape[1], use_bias=False,
                          rngs=nnx.Rngs(init_key))  # fmt: skip
    elif cfg.objective == "autoencoder":
        head = _Decoder(encoder.dim, images.shape[1:], rngs=nnx.Rngs(init_key))
    else:
        raise ValueError(f"objective={cfg.objective!r} is not 'autoencoder' or 'targets'")
    graphdef, params = nnx.split((encoder, head), nnx.Param)
    tx = optax.adam(cfg.lr)
    opt_state = tx.init(params)
    x_all = jnp.asarray(images, jnp.float32)
    y_all = jnp.zeros(len(images), jnp.int32) if labels is None else jnp.asarray(labels)
    t_all = None if targets is None else jnp.asarray(targets, jnp.float32)
    bs = min(cfg.batch_size, len(images))

    def loss_fn(params, x, y):
        enc, hd = nnx.merge(graphdef, params)
        z = enc(x)
        if cfg.objective == "autoencoder":
            return jnp.mean((hd(z) - x) ** 2)
        logits = target_logits(z, hd, t_all, cfg.temperature)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    @jax.jit
    def step(params, opt_state, i):
        k = jax.random.fold_in(data_key, i)
        idx = jax.random.choice(k, len(images), (bs,), replace=False)
        x = x_all[idx]
        if cfg.crop_pad:
            x = augment(jax.random.fold_in(k, 1), x, pad=cfg.crop_pad)
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y_all[idx])
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    loss = first = jnp.nan
    for i in range(cfg.steps):
        params, opt_state, loss = step(params, opt_state, i)
        if i == 0:
            first = loss  # the loss of the initial parameters (computed before the update)
        if (i + 1) % 100 == 0 or i + 1 == cfg.steps:
            if not np.isfinite(float(loss)):
                raise FloatingPointError(
                    f"label-free pretraining ({cfg.objective}) loss is {float(loss)} by step "
                    f"{i + 1}: lower lr (now {cfg.lr})"
                )
    nnx.update((encoder, head), params)
    return {"loss": float(loss), "first_loss": float(first), "head": head}
