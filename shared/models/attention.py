"""The pluggable attention function used by every transformer block.

An attention function maps q [B, T, N, H], k/v [B, S, N, H] and an optional boolean mask
broadcastable to [B, N, T, S] (True = attend) to [B, T, N, H]. Kernels (e.g. FP4 attention)
are swapped in by passing another function with the same signature.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

AttentionFn = Callable[[jax.Array, jax.Array, jax.Array, jax.Array | None], jax.Array]


def dot_product_attention(
    q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
    """softmax(q k^T / sqrt(H)) v, in float32 logits; masked keys get zero weight."""
    logits = jnp.einsum("BTNH,BSNH->BNTS", q, k).astype(jnp.float32) / jnp.sqrt(q.shape[-1])
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.finfo(jnp.float32).min)
    weights = jax.nn.softmax(logits, axis=-1).astype(v.dtype)
    return jnp.einsum("BNTS,BSNH->BTNH", weights, v)


def key_padding_mask(valid: jax.Array) -> jax.Array:
    """valid: [B, S] bool -> [B, 1, 1, S] mask letting every query see the valid keys only."""
    return valid[:, None, None, :]
