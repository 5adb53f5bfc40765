"""Fitted Q-functions for the DR control variate, vectorized over a leading batch axis R.

Two representations: tabular Q [R, S, A] (discrete states) and linear Q(s, a) = psi(s) . theta_a
with theta [R, A, k] (state features psi, e.g. the cancer simulator's continuous state). Both are
fitted by FQE (tabular: backward over t, time-indexed; linear: H sweeps of a stationary Q with t
among the features) or by the MRDR objective (stationary, as in COBS). A sample
is a live step (s_t, a_t, r_t, s_{t+1}); the bootstrap at s_{t+1} is 0 when s_{t+1} is terminal
or t + 1 = H (the evaluated objective is the H-step return).
"""

from __future__ import annotations

import numpy as np

from projects.shaped_ope import estimators


def _bincount(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Per-row bincount: index, values [R, m] -> sums [R, size] (one np.bincount call)."""
    rows = index.shape[0]
    flat = (index + size * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, values.ravel(), minlength=rows * size).reshape(rows, size)


def next_alive(alive: np.ndarray) -> np.ndarray:
    """[R, n, H]: is s_{t+1} live and t + 1 < H (where the bootstrap value counts)."""
    return np.concatenate([alive[..., 1:], np.zeros_like(alive[..., :1])], axis=-1)


def tabular_fqe(
    s: np.ndarray,
    a: np.ndarray,
    r: np.ndarray,
    alive: np.ndarray,
    pi: np.ndarray,
    gamma: float,
) -> np.ndarray:
    """Finite-horizon FQE with one-hot (t, s, a) features, backward over t (the least-squares
    fit is the per-cell mean of r_t + gamma V_{t+1}(s_{t+1})): s [R, n, H + 1], a, r, alive
    [R, n, H], pi [S, A] -> Q [R, H, S, A] (0 in unvisited cells).

    Time-indexed because the truth is: a stationary FQE pooled over t mixes the values of
    different steps-to-go (on the chain its DR variance was ~50x that of the exact Q^pi_{H-t})."""
    num_s, num_a = pi.shape
    reps, _, horizon = a.shape
    q = np.zeros((reps, horizon, num_s, num_a))
    v_next = np.zeros((reps, num_s))
    for t in range(horizon - 1, -1, -1):
        cell = s[:, :, t] * num_a + a[:, :, t]
        live = alive[:, :, t].astype(np.float64)
        boot = alive[:, :, t + 1] if t + 1 < horizon else np.zeros_like(live)
        target = r[:, :, t] + gamma * boot * np.take_along_axis(v_next, s[:, :, t + 1], axis=1)
        counts = _bincount(cell, live, num_s * num_a)
        qt = _bincount(cell, target * live, num_s * num_a) / np.maximum(counts, 1.0)
        q[:, t] = qt.reshape(reps, num_s, num_a)
        v_next = (q[:, t] * pi).sum(-1)
    return q


def mrdr_sample_weights(rho: np.ndarray, r: np.ndarray, alive: np.ndarray, gamma: float):
    """MRDR's per-(i, t) weight gamma^{2t} w_{t-1}^2 rho_t (not w_t^2) and the importance-weighted
    reward-to-go R~_t = sum_{k>=t} (w_k / w_t) gamma^{k-t} r_k, by R~_t = r_t + gamma rho_{t+1}
    R~_{t+1} (no division by a weight that may be 0). All [R, n, H]."""
    _, w_prev = estimators.weights(rho)
    horizon = rho.shape[-1]
    weight = estimators.discounts(horizon, gamma) ** 2 * w_prev**2 * rho * alive
    togo = np.zeros_like(r)
    togo[..., -1] = r[..., -1]
    for t in range(horizon - 2, -1, -1):
        togo[..., t] = r[..., t] + gamma * rho[..., t + 1] * togo[..., t + 1]
    return weight, togo


def mrdr_matrix(pi_s: np.ndarray, mu_s: np.ndarray) -> np.ndarray:
    """D = diag(pi)(diag(1/mu) - 11^T)diag(pi) = diag(pi^2/mu) - pi pi^T: [..., A] -> [..., A, A].
    MRDR's Omega subtracts the all-ones matrix (COBS `ope/algos/mrdr.py`)."""
    return np.einsum("...a,ab->...ab", pi_s**2 / mu_s, np.eye(pi_s.shape[-1])) - np.einsum(
        "...a,...b->...ab", pi_s, pi_s
    )


def tabular_mrdr(s, a, r, rho, alive, pi, mu, gamma) -> np.ndarray:
    """MRDR (Farajtabar et al. 2018, COBS objective) with tabular Q: minimizes
    sum_{i,t} weight * q^T Omega q, q = diag(pi(.|s_t)) Q(s_t, .) - R~_t e_{a_t}. It decouples over
    states: (sum of weights at s) D_s Q(s, .) = sum weight R~ (e_a / mu(a|s) - 1) * pi(.|s).
    D_s is singular along Q(s, .) ~ mu/pi, a direction that leaves the DR estimate unchanged;
    the minimum-norm solution is taken. Shapes as `tabular_fqe`; returns Q [R, S, A]."""
    num_s, num_a = pi.shape
    reps = s.shape[0]
    weight, togo = mrdr_sample_weights(rho, r, alive, gamma)
    st = s[..., :-1].reshape(reps, -1)
    cell = (s[..., :-1] * num_a + a).reshape(reps, -1)
    total = _bincount(st, weight.reshape(reps, -1), num_s)  # [R, S]
    u = _bincount(cell, (weight * togo).reshape(reps, -1), num_s * num_a)
    u = u.reshape(reps, num_s, num_a)
    safe_mu = np.where(mu > 0, mu, 1.0)
    rhs = pi * (u / safe_mu - u.sum(-1, keepdims=True))  # [R, S, A]
    d_pinv = np.linalg.pinv(mrdr_matrix(pi, safe_mu))  # [S, A, A], the same for every rep
    q = np.einsum("sab,rsb->rsa", d_pinv, rhs)
    return np.where(total[..., None] > 0, q / np.where(total > 0, total, 1.0)[..., None], 0.0)


def tabular_values(q: np.ndarray, pi: np.ndarray, s: np.ndarray, a: np.ndarray, alive):
    """(Q(s_t, a_t), V(s_t)) [R, n, H] of a tabular Q, stationary [R, S, A] or time-indexed
    [R, H, S, A], on a batch (0 where not live)."""
    reps, n, horizon = a.shape
    if q.ndim == 3:
        q = np.broadcast_to(q[:, None], (reps, horizon) + q.shape[1:])
    rr = np.arange(reps)[:, None, None]
    t = np.arange(horizon)
    st = s[..., :-1]
    q_sa = q[rr, t, st, a]
    v_s = (q[rr, t, st] * pi[st]).sum(-1)
    return q_sa * alive, v_s * alive


def linear_fqe(psi, a, r, alive, pi_obs, gamma, sweeps, ridge=1e-6) -> np.ndarray:
    """FQE with Q(s, a) = psi(s) . theta_a: psi [R, n, H + 1, k] state features, a, r, alive
    [R, n, H], pi_obs [R, n, H + 1, A] target probabilities at every state -> theta [R, A, k].
    The normal equations are formed once (G theta = b + gamma M theta), then swept H times."""
    num_a = pi_obs.shape[-1]
    phi = np.eye(num_a)[a][..., :, None] * psi[..., :-1, None, :]  # [R, n, H, A, k]
    phi_next = pi_obs[..., 1:, :, None] * psi[..., 1:, None, :] * next_alive(alive)[..., None, None]
    reps, d = phi.shape[0], num_a * psi.shape[-1]
    phi = (phi * alive[..., None, None]).reshape(reps, -1, d)
    phi_next = phi_next.reshape(reps, -1, d)
    gram = np.einsum("rmd,rme->rde", phi, phi) + ridge * phi.shape[1] * np.eye(d)
    m = np.einsum("rmd,rme->rde", phi, phi_next)
    b = np.einsum("rmd,rm->rd", phi, r.reshape(reps, -1))
    g_inv = np.linalg.inv(gram)
    theta = np.zeros((reps, d))
    for _ in range(sweeps):
        theta = np.einsum("rde,re->rd", g_inv, b + gamma * np.einsum("rde,re->rd", m, theta))
    return theta.reshape(reps, num_a, -1)


def linear_mrdr(psi, a, r, rho, alive, pi_obs, mu_obs, gamma) -> np.ndarray:
    """MRDR with Q(s, .) = Theta psi(s): the weighted quadratic objective of `tabular_mrdr`
    solved in theta (minimum-norm). pi_obs, mu_obs [R, n, H + 1, A] -> theta [R, A, k]."""
    weight, togo = mrdr_sample_weights(rho, r, alive, gamma)
    pi_t, mu_t, ps = pi_obs[..., :-1, :], mu_obs[..., :-1, :], psi[..., :-1, :]
    dmat = mrdr_matrix(pi_t, mu_t)  # [R, n, H, A, A]
    lhs = np.einsum("rnt,rntab,rntk,rntl->rakbl", weight, dmat, ps, ps)
    g = pi_t * (np.eye(pi_t.shape[-1])[a] / mu_t - 1.0)  # [R, n, H, A]
    rhs = np.einsum("rnt,rnta,rntk->rak", weight * togo, g, ps)
    reps, num_a, k = rhs.shape
    sol = np.einsum(
        "rde,re->rd", np.linalg.pinv(lhs.reshape(reps, num_a * k, -1)), rhs.reshape(reps, -1)
    )
    return sol.reshape(reps, num_a, k)


def linear_values(theta, psi, a, alive, pi_obs):
    """(Q(s_t, a_t), V(s_t)) [R, n, H] of a linear Q on a batch (0 where not live)."""
    q_all = np.einsum("rntk,rak->rnta", psi[..., :-1, :], theta)  # [R, n, H, A]
    q_sa = np.take_along_axis(q_all, a[..., None], -1)[..., 0]
    v_s = (q_all * pi_obs[..., :-1, :]).sum(-1)
    return q_sa * alive, v_s * alive
