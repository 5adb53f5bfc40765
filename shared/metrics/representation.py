"""Statistics of learned representations, for detecting collapse."""

from __future__ import annotations

import numpy as np


def per_dimension_variance(emb: np.ndarray) -> np.ndarray:
    """emb: [N, ...] -> variance over the N rows of every embedding dimension, flattened."""
    emb = np.asarray(emb, np.float64).reshape(len(emb), -1)
    return emb.var(axis=0)


def effective_rank(emb: np.ndarray, center: bool = True) -> float:
    """Effective rank (Roy & Vetterli, 2007): exp of the entropy of the singular values of the
    [N, D] matrix normalized by their sum (centred over rows unless center=False). 1 for
    rank-one data, D for isotropic data, 0 for constant (or zero) data."""
    emb = np.asarray(emb, np.float64).reshape(len(emb), -1)
    s = np.linalg.svd(emb - emb.mean(0) if center else emb, compute_uv=False)
    total = s.sum()
    if total <= 1e-12 * max(1.0, np.abs(emb).max()):
        return 0.0
    p = s / total
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))
