"""k-means (k-means++ init, Lloyd iterations) with a fixed seed, and cluster purity."""

from __future__ import annotations

import numpy as np


def kmeans(x: np.ndarray, k: int, seed: int = 0, iters: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """x [n, d] -> (assignment [n] int, centres [k, d]); deterministic for a given seed."""
    x = np.asarray(x, np.float64)
    n = len(x)
    if n < k:
        raise ValueError(f"k-means with k={k} needs at least k points, got {n}")
    rng = np.random.default_rng(seed)
    centres = [x[rng.integers(n)]]
    for _ in range(1, k):
        d2 = np.min(((x[:, None] - np.asarray(centres)[None]) ** 2).sum(-1), axis=1)
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(n, 1.0 / n)
        centres.append(x[rng.choice(n, p=p)])
    centres = np.asarray(centres)
    assign = np.zeros(n, int)
    for it in range(iters):
        d2 = ((x[:, None] - centres[None]) ** 2).sum(-1)
        new = np.argmin(d2, axis=1)
        if it and np.array_equal(new, assign):
            break
        assign = new
        for j in range(k):
            if np.any(assign == j):
                centres[j] = x[assign == j].mean(0)
    return assign, centres


def purity(assign: np.ndarray, labels: np.ndarray) -> tuple[float, dict]:
    """(Σ_clusters majority-label count / n, {cluster: {label: count}})."""
    table = {}
    for c in np.unique(assign):
        labs, counts = np.unique(labels[assign == c], return_counts=True)
        table[int(c)] = {str(lab): int(n) for lab, n in zip(labs, counts)}
    hit = sum(max(row.values()) for row in table.values())
    return hit / len(labels), table
