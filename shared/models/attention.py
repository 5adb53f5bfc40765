"""The pluggable attention function used by every transformer block.

An attention function maps q [B, T, N, H], k/v [B, S, N, H] and an optional boolean mask
broadcastable to [B, N, T, S] (True = attend) to [B, T, N, H]. Kernels (e.g. FP4 attention)
are swapped in by passing another function with the same signature.

`grouped_attention` and `causal_grouped_attention` compute the same function for grouped-query
attention (k/v with K <= N heads) without repeating the K/V heads; the causal one also skips the
key blocks that lie above the diagonal. The LLaMA decoder uses them for its default attention.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

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


def _grouped_heads(q: jax.Array, k: jax.Array, v: jax.Array):
    """q [B, T, N, H] -> scaled [B, K, G, T, H]; k/v [B, S, K, H] -> [B, K, S, H]."""
    b, t, n, h = q.shape
    kh = k.shape[2]
    if n % kh:
        raise ValueError(f"{n} query heads are not a multiple of {kh} key/value heads")
    # The scale on q is exact (as the reference's division of the logits) when H is a power of 4.
    q = q * jnp.asarray(1.0 / np.sqrt(h), q.dtype)
    qg = q.reshape(b, t, kh, n // kh, h).transpose(0, 2, 3, 1, 4)
    return qg, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)


def _grouped_core(qg: jax.Array, kt: jax.Array, vt: jax.Array, mask) -> jax.Array:
    """qg [B, K, G, T, H], kt/vt [B, K, S, H], mask [B|1, K|1, G|1, T|1, S] -> [B, K, G, T, H].

    Each kv head's G query heads form one [G*T, H] @ [H, S] matmul with both batch axes (B, K)
    leading, the layout XLA's CPU matmuls take without extra copies."""
    b, kh, g, t, h = qg.shape
    s = kt.shape[2]
    logits = jnp.einsum("BKMH,BKSH->BKMS", qg.reshape(b, kh, g * t, h), kt)
    logits = logits.astype(jnp.float32).reshape(b, kh, g, t, s)
    if mask is not None:
        logits = jnp.where(mask, logits, jnp.finfo(jnp.float32).min)
    weights = jax.nn.softmax(logits, axis=-1).astype(vt.dtype).reshape(b, kh, g * t, s)
    return jnp.einsum("BKMS,BKSH->BKMH", weights, vt).reshape(b, kh, g, t, h)


def _ungroup(out: jax.Array) -> jax.Array:
    """[B, K, G, T, H] -> [B, T, K*G, H]."""
    b, kh, g, t, h = out.shape
    return out.transpose(0, 3, 1, 2, 4).reshape(b, t, kh * g, h)


def grouped_attention(
    q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None = None
) -> jax.Array:
    """`dot_product_attention` for grouped-query heads, without repeating them.

    q [B, T, N, H], k/v [B, S, K, H] with N = K * G: query head n reads kv head n // G.
    mask broadcastable to [B, N, T, S]. Returns [B, T, N, H]."""
    qg, kt, vt = _grouped_heads(q, k, v)
    kh, g = qg.shape[1], qg.shape[2]
    if mask is not None:  # [B|1, N|1, T|1, S|1] -> [B|1, K|1, G|1, T|1, S|1]
        mask = jnp.reshape(mask, (1,) * (4 - mask.ndim) + mask.shape)
        if mask.shape[1] == 1:
            mask = mask[:, :, None]
        else:
            mask = mask.reshape(mask.shape[0], kh, g, *mask.shape[2:])
    return _ungroup(_grouped_core(qg, kt, vt, mask))


def causal_grouped_attention(
    q: jax.Array, k: jax.Array, v: jax.Array, block: int = 64
) -> jax.Array:
    """Causal `grouped_attention` (query i sees keys 0..i), q [B, T, N, H], k/v [B, T, K, H].

    Queries go in blocks of `block`; block [c0, c1) attends to keys [0, c1) only, so the key
    blocks above the diagonal are never computed (at T = 256 and block 64: 62.5% of the
    logits). A last block shorter than `block` is handled as it is."""
    t = q.shape[1]
    if k.shape[1] != t:
        raise ValueError(f"causal attention needs as many keys as queries: {k.shape[1]} vs {t}")
    qg, kt, vt = _grouped_heads(q, k, v)  # once, outside the block loop
    outs = []
    for c0 in range(0, t, block):
        c1 = min(t, c0 + block)
        mask = jnp.arange(c1)[None, :] <= jnp.arange(c0, c1)[:, None]  # [c1 - c0, c1]
        outs.append(_grouped_core(qg[:, :, :, c0:c1], kt[:, :, :c1], vt[:, :, :c1], mask))
    return _ungroup(outs[0] if len(outs) == 1 else jnp.concatenate(outs, axis=3))
