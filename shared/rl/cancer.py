"""Tumour-growth-inhibition (TGI) cancer simulator, vectorized over episodes in float64 numpy.

The model of Ribba et al. (2012) as used for chemotherapy RL by Yauney & Shah (2018): a
proliferative tissue P, a quiescent tissue Q, damaged quiescent cells Q_p and a drug
concentration C, one step per treatment decision, horizon 30, two actions (no dose / dose).

    dose_t = 0.15 a_t + 0.85 dose_{t-1}                     (smoothed dose)
    C'  = (C + dose_t)(1 - KDE)
    P'  = P + lambda_p P (1 - P*/K) + k_qpp Q_p - k_pq P - gamma_d C' KDE P
    Q'  = Q + k_pq P - gamma_d C' KDE Q
    Q_p'= Q_p + gamma_d C' KDE Q - k_qpp Q_p - delta_qp Q_p
    P*  = P + Q + Q_p                                       (total tumour size)
    r_t = w (P*_t - P*_{t+1}) - (1 - w) penalty C'   (+ 10 (P*_0 - P*_H) at the last step)

Reconstruction (not verified against the original papers): P* as the total tumour size (the
symbol is reconstructed), the carrying capacity K = 100, the dose smoothing on the previous
*smoothed* dose (stored in the state so that it stays Markov), the use of the updated C' in the
tissue equations, and the reward weights w = 0.5, penalty = 1. The constants lambda_p .. Q_0 are
the ones quoted from a public implementation. Transitions are deterministic: all randomness in an
episode comes from the (stochastic) policy.
"""

from __future__ import annotations

import dataclasses

import numpy as np

OBS_NAMES = ("C", "P", "Q", "Q_p", "dose_prev", "t")  # the columns of a state


@dataclasses.dataclass(frozen=True)
class CancerParams:
    lambda_p: float = 0.121  # growth rate of the proliferative tissue
    k_qpp: float = 0.0031  # damaged quiescent -> proliferative
    k_pq: float = 0.0295  # proliferative -> quiescent
    gamma_d: float = 0.729  # drug damage strength
    delta_qp: float = 0.00867  # death rate of damaged quiescent cells
    kde: float = 0.24  # drug elimination per step
    capacity: float = 100.0  # K, carrying capacity (Reconstruction)
    p0: float = 7.13  # initial proliferative tissue
    q0: float = 41.2  # initial quiescent tissue
    smoothing: float = 0.15  # weight of the new action in the smoothed dose
    reward_weight: float = 0.5  # w: tumour shrinkage vs drug penalty (Reconstruction)
    dose_penalty: float = 1.0  # penalty per unit of concentration (Reconstruction)
    terminal_scale: float = 10.0  # terminal reward 10 (P*_0 - P*_H)
    horizon: int = 30  # treatment decisions per episode


def initial_state(num: int, params: CancerParams = CancerParams()) -> np.ndarray:
    """[num, 6] states (C, P, Q, Q_p, dose_prev, t) at t = 0: no drug, untreated tumour."""
    x = np.zeros((num, len(OBS_NAMES)))
    x[:, 1], x[:, 2] = params.p0, params.q0
    return x


def tumour_size(x: np.ndarray) -> np.ndarray:
    """P* = P + Q + Q_p of states [..., 6] -> [...]."""
    return x[..., 1] + x[..., 2] + x[..., 3]


def step(
    x: np.ndarray, a: np.ndarray, params: CancerParams = CancerParams()
) -> tuple[np.ndarray, np.ndarray]:
    """One decision for a batch: states [n, 6], actions [n] in {0, 1} -> (next states, rewards)."""
    c, p, q, qp, dose_prev, t = x.T
    pr = params
    dose = pr.smoothing * a + (1.0 - pr.smoothing) * dose_prev
    c2 = (c + dose) * (1.0 - pr.kde)
    kill = pr.gamma_d * c2 * pr.kde
    size = p + q + qp
    p2 = p + pr.lambda_p * p * (1.0 - size / pr.capacity) + pr.k_qpp * qp - pr.k_pq * p - kill * p
    q2 = q + pr.k_pq * p - kill * q
    qp2 = qp + kill * q - pr.k_qpp * qp - pr.delta_qp * qp
    x2 = np.stack([c2, p2, q2, qp2, dose, t + 1.0], axis=1)
    reward = pr.reward_weight * (size - tumour_size(x2)) - (1.0 - pr.reward_weight) * (
        pr.dose_penalty * c2
    )
    last = t + 1.0 >= pr.horizon  # the terminal bonus is paid on the last transition
    size0 = pr.p0 + pr.q0
    reward = reward + np.where(last, pr.terminal_scale * (size0 - tumour_size(x2)), 0.0)
    return x2, reward


def rollout(
    rng: np.random.Generator,
    dose_prob: float | np.ndarray,
    num_episodes: int,
    params: CancerParams = CancerParams(),
) -> dict[str, np.ndarray]:
    """Episodes of the policy that doses with probability `dose_prob` at every step (a scalar,
    or [horizon] per step). Returns obs [n, H + 1, 6], actions [n, H], rewards [n, H]."""
    h = params.horizon
    prob = np.broadcast_to(np.asarray(dose_prob, np.float64), (h,))
    x = initial_state(num_episodes, params)
    obs, acts, rews = [x], [], []
    for t in range(h):
        a = (rng.random(num_episodes) < prob[t]).astype(np.float64)
        x, r = step(x, a, params)
        obs.append(x)
        acts.append(a)
        rews.append(r)
    return {
        "obs": np.stack(obs, 1),
        "actions": np.stack(acts, 1).astype(np.int32),
        "rewards": np.stack(rews, 1),
    }
