"""Off-policy estimators as pure functions of a batch of trajectories (float64 numpy).

Every array has leading batch axes `...` (e.g. Monte-Carlo repetitions), then n trajectories,
then H steps: rho [..., n, H] per-step ratios pi(a_t|s_t)/mu(a_t|s_t) (1 after termination),
r [..., n, H] rewards (0 after termination). Estimates are [...]; "terms" are the per-trajectory
values [..., n] whose mean is the estimate (control-variate regressions work on those).

Notation of the spec: w_t = prod_{k<=t} rho_k, w_{-1} = 1, G = sum_t gamma^t r_t.
"""

from __future__ import annotations

import numpy as np


def weights(rho: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w_t, w_{t-1}), both [..., n, H]: cumulative importance weights and their shift."""
    w = np.cumprod(rho, axis=-1)
    w_prev = np.concatenate([np.ones_like(w[..., :1]), w[..., :-1]], axis=-1)
    return w, w_prev


def discounts(horizon: int, gamma: float) -> np.ndarray:
    """gamma^t for t = 0..H-1."""
    return gamma ** np.arange(horizon, dtype=np.float64)


def is_terms(rho: np.ndarray, r: np.ndarray, gamma: float) -> np.ndarray:
    """Trajectory-wise IS: w_{H-1} G -> [..., n]."""
    g = (discounts(r.shape[-1], gamma) * r).sum(-1)
    return np.prod(rho, axis=-1) * g


def pdis_terms(rho: np.ndarray, r: np.ndarray, gamma: float) -> np.ndarray:
    """Per-decision IS: sum_t gamma^t w_t r_t -> [..., n]."""
    w, _ = weights(rho)
    return (discounts(r.shape[-1], gamma) * w * r).sum(-1)


def wis(rho: np.ndarray, r: np.ndarray, gamma: float) -> np.ndarray:
    """Weighted IS: sum_i w^i G^i / sum_i w^i -> [...] (0 when every weight is 0)."""
    w_end = np.prod(rho, axis=-1)
    g = (discounts(r.shape[-1], gamma) * r).sum(-1)
    total = w_end.sum(-1)
    return np.where(total > 0, (w_end * g).sum(-1) / np.where(total > 0, total, 1.0), 0.0)


def wpdis(rho: np.ndarray, r: np.ndarray, gamma: float) -> np.ndarray:
    """Weighted PDIS: sum_t gamma^t sum_i (w^i_t / sum_j w^j_t) r^i_t -> [...]."""
    w, _ = weights(rho)
    total = w.sum(-2, keepdims=True)  # [..., 1, H]
    norm = np.where(total > 0, w / np.where(total > 0, total, 1.0), 0.0)
    return (discounts(r.shape[-1], gamma) * (norm * r).sum(-2)).sum(-1)


def q_cv_terms(rho: np.ndarray, q_sa: np.ndarray, v_s: np.ndarray, gamma: float) -> np.ndarray:
    """The DR control variate C_Q = sum_t gamma^t (w_t Q(s_t, a_t) - w_{t-1} V(s_t)) -> [..., n].

    q_sa, v_s: [..., n, H] fitted values at the visited (s_t, a_t) and s_t (0 at terminal
    states), V(s) = sum_a pi(a|s) Q(s, a). Zero mean under mu for any Q: E[w_t Q | h_t, w_{t-1}]
    = w_{t-1} V(s_t). Note the pairing: w_t with Q, w_{t-1} with V (a trap of the spec)."""
    w, w_prev = weights(rho)
    return (discounts(rho.shape[-1], gamma) * (w * q_sa - w_prev * v_s)).sum(-1)


def dr_terms(rho, r, q_sa, v_s, gamma) -> np.ndarray:
    """Doubly robust (Jiang & Li 2016) per trajectory = PDIS - C_Q (the bootstrap at s_H is 0,
    i.e. the H-step objective) -> [..., n]."""
    return pdis_terms(rho, r, gamma) - q_cv_terms(rho, q_sa, v_s, gamma)


def shaping_cv_terms(rho: np.ndarray, phi: np.ndarray, gamma: float) -> np.ndarray:
    """Reconstruction: the reward-shaping control variate
    C_Phi = Phi(s_0) + sum_t gamma^t w_t (gamma Phi(s_{t+1}) - Phi(s_t)).

    phi: [..., n, H + 1] potentials of s_0..s_H, or [..., n, H + 1, k] feature columns (then the
    result is z [..., n, k], one CV per feature). E_mu[C_Phi] = gamma^H E_pi[Phi(s_H)], so the
    caller must pass Phi = 0 at terminal states AND at the truncation step H (a time-dependent
    potential Phi_H = 0); otherwise the shaped estimator is biased on truncated episodes.
    Shaping terms use w_t (with rho_t) on both potentials: a trap of the spec."""
    scalar = phi.ndim == rho.ndim
    cols = phi[..., None] if scalar else phi  # [..., n, H + 1, k]
    w, _ = weights(rho)
    step = gamma * cols[..., 1:, :] - cols[..., :-1, :]
    disc = discounts(rho.shape[-1], gamma)[:, None]
    z = cols[..., 0, :] + (disc * w[..., None] * step).sum(-2)
    return z[..., 0] if scalar else z


def shaped_terms(rho, r, phi, gamma) -> np.ndarray:
    """Reconstruction: V_shape per trajectory = PDIS + C_Phi = Phi(s_0) + PDIS(r'), with the
    shaped reward r'_t = r_t + gamma Phi(s_{t+1}) - Phi(s_t) -> [..., n]."""
    return pdis_terms(rho, r, gamma) + shaping_cv_terms(rho, phi, gamma)


def ols_slopes(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Control-variate coefficients lambda [..., k]: the slopes of the least-squares regression
    of y [..., m] on x [..., m, k] with an intercept, i.e. Cov(x)^+ Cov(x, y) (minimum-norm
    when the columns are collinear). Minimizes the sample variance of y - x lambda."""
    xc = x - x.mean(-2, keepdims=True)
    yc = y - y.mean(-1, keepdims=True)
    return np.einsum("...km,...m->...k", np.linalg.pinv(xc), yc)


def cv_estimate(y: np.ndarray, x: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """mean_i (y_i - x_i . lambda) -> [...]: y [..., m], x [..., m, k], lambda [..., k]."""
    return (y - np.einsum("...mk,...k->...m", x, lam)).mean(-1)
