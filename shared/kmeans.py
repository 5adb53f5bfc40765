"""k-means for many points: k-means++ seeding on a sample, then Lloyd iterations with distances
from one matrix product per chunk (memory O(chunk · k), not O(n · k · d)). Deterministic for a
seed. For a few hundred points `projects/algotrace/kmeans.py` does the same in plain NumPy."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def nearest(x: np.ndarray, centres: np.ndarray, chunk: int = 16384) -> np.ndarray:
    """[n] index of the nearest centre (squared Euclidean; ties: the lower index)."""
    c2 = (centres.astype(np.float64) ** 2).sum(1)
    out = np.empty(len(x), np.int64)
    for s in range(0, len(x), chunk):
        xb = x[s : s + chunk].astype(np.float64)
        out[s : s + chunk] = np.argmin(c2[None, :] - 2 * xb @ centres.T.astype(np.float64), 1)
    return out


def kmeans_pp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding: each next centre drawn with probability ∝ squared distance."""
    centres = np.empty((k, x.shape[1]), np.float64)
    centres[0] = x[rng.integers(len(x))]
    d2 = ((x - centres[0]) ** 2).sum(1)
    for j in range(1, k):
        total = d2.sum()
        i = rng.choice(len(x), p=d2 / total) if total > 0 else rng.integers(len(x))
        centres[j] = x[i]
        d2 = np.minimum(d2, ((x - centres[j]) ** 2).sum(1))
    return centres


def kmeans(
    x: np.ndarray, k: int, seed: int = 0, iters: int = 20, seed_sample: int = 20000
) -> np.ndarray:
    """Centres [k, d] (float32) of x [n, d]; empty clusters keep their previous centre."""
    if len(x) < k:
        raise ValueError(f"k-means with k={k} needs at least k points, got {len(x)}")
    rng = np.random.default_rng(seed)
    sample = x[rng.choice(len(x), min(seed_sample, len(x)), replace=False)].astype(np.float64)
    centres = kmeans_pp(sample, k, rng)
    assign = None
    for _ in range(iters):
        new = nearest(x, centres)
        if assign is not None and np.array_equal(new, assign):
            break
        assign = new
        counts = np.bincount(assign, minlength=k)
        onehot = sp.csr_matrix((np.ones(len(x)), (assign, np.arange(len(x)))), shape=(k, len(x)))
        sums = onehot @ x.astype(np.float64)
        filled = counts > 0
        centres[filled] = sums[filled] / counts[filled, None]
    return centres.astype(np.float32)
