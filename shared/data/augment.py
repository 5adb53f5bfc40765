"""Image augmentations as pure jax functions of (key, images): the same key gives the same batch.

Images are `x: [b, H, W, C]` float in [0, 1]; each image draws its own crop, flip and jitter from
`key`. All functions jit and keep shapes, so they sit inside a training step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def random_crop(key: jax.Array, x: jax.Array, pad: int = 2) -> jax.Array:
    """Zero-pads each side by `pad`, then crops a random HxW window per image (a shift of up to
    `pad` pixels in each direction)."""
    b, h, w, c = x.shape
    padded = jnp.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    offsets = jax.random.randint(key, (b, 2), 0, 2 * pad + 1)

    def crop(img, off):
        return jax.lax.dynamic_slice(img, (off[0], off[1], 0), (h, w, c))

    return jax.vmap(crop)(padded, offsets)


def random_flip(key: jax.Array, x: jax.Array, p: float = 0.5) -> jax.Array:
    """Mirrors each image left-right with probability p."""
    flip = jax.random.bernoulli(key, p, (x.shape[0], 1, 1, 1))
    return jnp.where(flip, x[:, :, ::-1], x)


def color_jitter(
    key: jax.Array, x: jax.Array, brightness: float = 0.2, contrast: float = 0.2
) -> jax.Array:
    """Per image: adds a brightness offset ~ U[-brightness, brightness] and scales the deviation
    from the image mean by ~ U[1 - contrast, 1 + contrast]; the result is clipped to [0, 1]."""
    kb, kc = jax.random.split(key)
    shape = (x.shape[0], 1, 1, 1)
    offset = jax.random.uniform(kb, shape, minval=-brightness, maxval=brightness)
    scale = jax.random.uniform(kc, shape, minval=1 - contrast, maxval=1 + contrast)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return jnp.clip((x - mean) * scale + mean + offset, 0.0, 1.0)


def add_trigger(x: jax.Array, size: int = 3, value: float = 1.0) -> jax.Array:
    """Sets the bottom-right `size` x `size` corner of every image (all channels) to `value`:
    the patch trigger of backdoor attacks. Idempotent; no other pixel changes."""
    return x.at[..., -size:, -size:, :].set(value)


def augment(
    key: jax.Array, x: jax.Array, pad: int = 2, flip: bool = False, jitter: float = 0.0
) -> jax.Array:
    """Crop (pad > 0), flip (flip=True; wrong for digits and text), jitter (jitter > 0)."""
    kc, kf, kj = jax.random.split(key, 3)
    if pad:
        x = random_crop(kc, x, pad)
    if flip:
        x = random_flip(kf, x)
    if jitter:
        x = color_jitter(kj, x, jitter, jitter)
    return x
