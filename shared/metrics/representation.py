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
    return erank_of_singular_values(s, np.abs(emb).max(initial=0.0))


def erank_of_singular_values(s: np.ndarray, scale: float) -> float:
    """exp(entropy of s / sum(s)); 0 when the sum is below 1e-12 * max(1, scale), the matrix's
    largest absolute entry (numerically zero data)."""
    total = s.sum()
    if total <= 1e-12 * max(1.0, scale):
        return 0.0
    p = s / total
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))
