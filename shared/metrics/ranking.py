"""Top-K ranking metrics for recommendation: full ranking over all items, known items masked.

Recall@K = |top-K ∩ test(u)| / |test(u)|, averaged over users with a non-empty test set.
NDCG@K with binary gains: DCG = Σ_{r≤K} rel_r / log2(r + 1); the ideal DCG places
min(K, |test(u)|) hits at the top. Items in `mask` (a user's training items) score −inf before
top-K, so they can never be recommended.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def top_k_items(scores: jax.Array, mask: jax.Array, k: int) -> jax.Array:
    """Indices [B, k] of the k best-scoring unmasked items. scores, mask: [B, I] (mask bool)."""
    if k > scores.shape[-1]:
        raise ValueError(f"k={k} exceeds the number of items {scores.shape[-1]}")
    return jax.lax.top_k(jnp.where(mask, -jnp.inf, scores), k)[1]


def recall_ndcg_from_topk(topk: jax.Array, test: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Per-user Recall@K and NDCG@K [B] of top-K lists [B, K] against test sets [B, I] (bool).

    Users with an empty test set get NaN (they are left out of the means)."""
    k = topk.shape[-1]
    hits = jnp.take_along_axis(test, topk, axis=-1).astype(jnp.float32)  # [B, K]
    n_test = test.sum(-1).astype(jnp.float32)
    discount = 1.0 / jnp.log2(jnp.arange(2, k + 2, dtype=jnp.float32))  # rank r -> 1/log2(r+1)
    dcg = (hits * discount).sum(-1)
    ideal_len = jnp.minimum(n_test, k)
    idcg = jnp.where(jnp.arange(k)[None, :] < ideal_len[:, None], discount, 0.0).sum(-1)
    valid = n_test > 0
    recall = jnp.where(valid, hits.sum(-1) / jnp.maximum(n_test, 1.0), jnp.nan)
    ndcg = jnp.where(valid, dcg / jnp.maximum(idcg, 1e-12), jnp.nan)
    return recall, ndcg


def recall_ndcg_at_k(
    scores: jax.Array, mask: jax.Array, test: jax.Array, k: int
) -> tuple[jax.Array, jax.Array]:
    """Per-user (Recall@K, NDCG@K) [B] from full scores [B, I], masked items and test sets."""
    return recall_ndcg_from_topk(top_k_items(scores, mask, k), test)


def mean_over_users(values: jax.Array | np.ndarray) -> float:
    """Mean over users with a test set (non-NaN entries); NaN if there are none."""
    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    return float(v.mean()) if len(v) else float("nan")
