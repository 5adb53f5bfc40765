"""Role assignment: dominant vs auxiliary channels from training data only.

Reconstruction (not confirmed by the paper): the paper says roles follow "how much each variable
reduces uncertainty". We use the Gaussian Granger form of that: the uncertainty channel i removes
from channel j is log Var(x_j | own lags) - log Var(x_j | own lags, lags of x_i) (least-squares
residual variances, lag order q), summed over j != i. Alternative considered: mutual information
-1/2 log(1 - rho_ij^2) (symmetric, so it cannot tell driver from driven).

Lag order, Reconstruction: q minimizes the pooled BIC of the channels' own-lag AR(q) fits on the
training split, over 1 <= q <= max_lags (a rule fixed before seeing any role score; the spec
suggests a fixed q = 5). Alternatives considered: a fixed q; a held-out part of the train split.
"""

from __future__ import annotations

import numpy as np


def _standardize(train: np.ndarray, max_steps: int) -> np.ndarray:
    x = np.asarray(train[:max_steps], np.float64)
    sd = x.std(0)
    return (x - x.mean(0)) / np.where(sd > 1e-8, sd, 1.0)


def _lag_matrix(x: np.ndarray, q: int) -> np.ndarray:
    """x: [T, C] -> [T - q, C, q] with [t, c, l] = x[t + q - 1 - l, c] (lag l + 1 of target t)."""
    return np.stack([x[q - 1 - lag : len(x) - 1 - lag] for lag in range(q)], 2)


def _rss(gram: np.ndarray, cross: np.ndarray, yy: float, cols: np.ndarray, ridge: float) -> float:
    """Residual sum of squares of the ridge fit of y on the design columns `cols`, from the Gram
    matrix `gram` = A'A of all columns, `cross` = A'y and yy = y'y (exact for any subset)."""
    g, r = gram[np.ix_(cols, cols)], cross[cols]
    b = np.linalg.solve(g + ridge * np.eye(len(cols)), r)
    return float(yy - 2 * b @ r + b @ g @ b)


def select_lag_order(
    train: np.ndarray, max_lags: int, max_steps: int = 10_000, ridge: float = 1e-3
) -> tuple[int, np.ndarray]:
    """train: [T, C] -> (q, bic [max_lags]): q = argmin_q sum_c BIC_c(q), BIC_c(q) =
    n log(RSS_c(q) / n) + (q + 1) log n for the own-lag AR(q) fit (with intercept) of channel c.
    Every q is fitted on the same n = T - max_lags targets, so the BICs are comparable."""
    if max_lags < 1:
        raise ValueError(f"max_lags={max_lags} must be >= 1")
    x = _standardize(train, max_steps)
    if len(x) < 4 * max_lags:
        raise ValueError(f"{len(x)} train steps are too few for max_lags={max_lags}")
    lags = _lag_matrix(x, max_lags)  # [n, C, max_lags]
    y = x[max_lags:]
    n = len(y)
    bic = np.zeros(max_lags)
    for c in range(x.shape[1]):
        a = np.concatenate([np.ones((n, 1)), lags[:, c]], 1)  # intercept, lags 1..max_lags
        gram, cross, yy = a.T @ a, a.T @ y[:, c], float(y[:, c] @ y[:, c])
        for q in range(1, max_lags + 1):
            rss = max(_rss(gram, cross, yy, np.arange(q + 1), ridge), 1e-12 * n)
            bic[q - 1] += n * np.log(rss / n) + (q + 1) * np.log(n)
    return int(np.argmin(bic)) + 1, bic


def role_scores(
    train: np.ndarray, lags: int = 5, max_steps: int = 4000, ridge: float = 1e-3
) -> np.ndarray:
    """train: [T, C] -> u: [C], u_i = uncertainty (nats x 2) channel i removes from the others."""
    x = _standardize(train, max_steps)
    c = x.shape[1]
    lagged = _lag_matrix(x, lags).reshape(len(x) - lags, c * lags)  # channel-major columns
    a = np.concatenate([np.ones((len(lagged), 1)), lagged], 1)
    y = x[lags:]
    gram, cross, yy = a.T @ a, a.T @ y, (y**2).sum(0)
    cols = [1 + np.arange(i * lags, (i + 1) * lags) for i in range(c)]  # channel i's lags
    u = np.zeros(c)
    for j in range(c):
        own = np.concatenate([[0], cols[j]])
        base = _rss(gram, cross[:, j], yy[j], own, ridge)
        for i in range(c):
            if i != j:
                both = np.concatenate([own, cols[i]])
                u[i] += np.log(base) - np.log(_rss(gram, cross[:, j], yy[j], both, ridge))
    return u


def assign_roles(scores: np.ndarray, num_dominant: int) -> np.ndarray:
    """[C] bool, True for the top-`num_dominant` channels by score (ties: lower index first)."""
    if not 1 <= num_dominant <= len(scores):
        raise ValueError(f"num_dominant={num_dominant} must be in [1, {len(scores)}]")
    order = np.argsort(-scores, kind="stable")
    out = np.zeros(len(scores), bool)
    out[order[:num_dominant]] = True
    return out
