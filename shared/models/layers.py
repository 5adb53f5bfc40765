"""Small stateless helpers: dropout with an explicit key, sinusoidal position tables."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def dropout(x: jax.Array, rate: float, key: jax.Array | None) -> jax.Array:
    """Inverted dropout; the identity when `key` is None (evaluation) or `rate` is 0."""
    if key is None or rate == 0.0:
        return x
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0).astype(x.dtype)


def split_key(key: jax.Array | None, n: int) -> list[jax.Array | None]:
    return [None] * n if key is None else list(jax.random.split(key, n))


def sinusoidal_positions(length: int, dim: int, base: float = 10000.0) -> np.ndarray:
    """[length, dim] table: sin on even, cos on odd channels, frequencies base^(-2i/dim).

    `base=10000` is the Transformer/I-JEPA table; T-JEPA's feature positions use base 100.
    """
    pos = np.arange(length, dtype=np.float64)[:, None]
    freq = np.exp(-np.log(base) * np.arange(0, dim, 2, dtype=np.float64) / dim)
    table = np.zeros((length, dim))
    table[:, 0::2] = np.sin(pos * freq)
    table[:, 1::2] = np.cos(pos * freq[: dim // 2])
    return table.astype(np.float32)
