"""State feature maps for linear value functions."""

from __future__ import annotations

import numpy as np


def unit_norm_rows(phi: np.ndarray) -> np.ndarray:
    """Scales every row to norm at most 1 by one common factor (the largest row norm), so the
    geometry between states is kept and ||phi(s)|| <= 1 as the TD analyses assume."""
    return phi / np.linalg.norm(phi, axis=1).max()


def gaussian_features(num_states: int, dim: int, seed: int = 0) -> np.ndarray:
    """[S, dim] i.i.d. N(0, 1) features, each row scaled to unit norm."""
    phi = np.random.default_rng(seed).normal(size=(num_states, dim))
    return phi / np.linalg.norm(phi, axis=1, keepdims=True)


def one_hot(num_states: int) -> np.ndarray:
    return np.eye(num_states)


def standardize_columns(x: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance per column (constant columns become 0)."""
    std = x.std(0)
    return (x - x.mean(0)) / np.where(std > 0, std, 1.0)
