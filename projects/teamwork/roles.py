"""Role assignment: dominant vs auxiliary channels from training data only.

Reconstruction (not confirmed by the paper): the paper says roles follow "how much each variable
reduces uncertainty". We use the Gaussian Granger form of that: the uncertainty channel i removes
from channel j is log Var(x_j | own lags) - log Var(x_j | own lags, lags of x_i) (least-squares
residual variances, lag order q), summed over j != i. Alternative considered: mutual information
-1/2 log(1 - rho_ij^2) (symmetric, so it cannot tell driver from driven).
"""

from __future__ import annotations

import numpy as np


def _lags(x: np.ndarray, q: int) -> np.ndarray:
    """x: [T] -> [T - q, q] with column l = x[t - 1 - l]."""
    return np.stack([x[q - 1 - lag : len(x) - 1 - lag] for lag in range(q)], 1)


def _residual_var(design: np.ndarray, y: np.ndarray, ridge: float) -> float:
    a = np.concatenate([design, np.ones((len(design), 1))], 1)
    coef = np.linalg.solve(a.T @ a + ridge * np.eye(a.shape[1]), a.T @ y)
    return float(np.mean((y - a @ coef) ** 2))


def role_scores(
    train: np.ndarray, lags: int = 5, max_steps: int = 4000, ridge: float = 1e-3
) -> np.ndarray:
    """train: [T, C] -> u: [C], u_i = uncertainty (nats x 2) channel i removes from the others."""
    x = np.asarray(train[:max_steps], np.float64)
    x = (x - x.mean(0)) / np.where(x.std(0) > 1e-8, x.std(0), 1.0)
    c = x.shape[1]
    lagged = [_lags(x[:, i], lags) for i in range(c)]
    targets = x[lags:]
    u = np.zeros(c)
    for j in range(c):
        base = _residual_var(lagged[j], targets[:, j], ridge)
        for i in range(c):
            if i != j:
                both = np.concatenate([lagged[j], lagged[i]], 1)
                u[i] += np.log(base) - np.log(_residual_var(both, targets[:, j], ridge))
    return u


def assign_roles(scores: np.ndarray, num_dominant: int) -> np.ndarray:
    """[C] bool, True for the top-`num_dominant` channels by score (ties: lower index first)."""
    if not 1 <= num_dominant <= len(scores):
        raise ValueError(f"num_dominant={num_dominant} must be in [1, {len(scores)}]")
    order = np.argsort(-scores, kind="stable")
    out = np.zeros(len(scores), bool)
    out[order[:num_dominant]] = True
    return out
