"""Tabular MDPs and their exact solutions (float64 numpy: these are the ground truths).

An MDP holds transition probabilities P[s, a, s'], rewards R[s, a, s'] (the reward of a
transition; its expectation is r(s, a) = sum_s' P R), a start distribution and terminal states.
Terminal states are absorbing with zero reward, so "episode over" and "stuck in a zero-reward
state" are the same thing for every value computed here.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class TabularMDP:
    P: np.ndarray  # [S, A, S] transition probabilities (rows sum to 1)
    R: np.ndarray  # [S, A, S] reward of each transition
    d0: np.ndarray  # [S] start distribution
    gamma: float  # discount
    terminal: np.ndarray  # [S] bool: absorbing, zero-reward states
    name: str = "mdp"

    def __post_init__(self):
        s, a, s2 = self.P.shape
        if s != s2 or self.R.shape != self.P.shape or self.d0.shape != (s,):
            raise ValueError(f"{self.name}: P {self.P.shape}, R {self.R.shape}, d0 {self.d0.shape}")
        if not np.allclose(self.P.sum(-1), 1.0, atol=1e-8) or (self.P < 0).any():
            raise ValueError(f"{self.name}: every P[s, a, :] must be a distribution")
        if not np.isclose(self.d0.sum(), 1.0) or not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"{self.name}: d0 must sum to 1 and gamma lie in [0, 1]")

    @property
    def num_states(self) -> int:
        return self.P.shape[0]

    @property
    def num_actions(self) -> int:
        return self.P.shape[1]

    @property
    def expected_reward(self) -> np.ndarray:
        """r(s, a) = sum_s' P(s'|s,a) R(s,a,s') -> [S, A] (zero at terminal states)."""
        return np.where(self.terminal[:, None], 0.0, (self.P * self.R).sum(-1))


def absorbing(P: np.ndarray, R: np.ndarray, terminal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P, R with every terminal state made a zero-reward self-loop."""
    P, R = P.copy(), R.copy()
    P[terminal] = 0.0
    idx = terminal.nonzero()[0]
    P[idx, :, idx] = 1.0
    R[terminal] = 0.0
    return P, R


def check_policy(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """pi [S, A] must give a distribution over actions in every state (terminal ones too)."""
    if pi.shape != (mdp.num_states, mdp.num_actions):
        raise ValueError(f"policy shape {pi.shape} != (states, actions) of {mdp.name}")
    bad = np.nonzero((pi < 0).any(1) | ~np.isclose(pi.sum(1), 1.0))[0]
    if len(bad):
        raise ValueError(f"policy rows {bad[:5].tolist()} are not distributions (e.g. all zero)")
    return pi


def policy_transition(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """P_pi[s, s'] = sum_a pi(a|s) P(s'|s,a); pi: [S, A] -> [S, S]."""
    return np.einsum("sa,sat->st", check_policy(mdp, pi), mdp.P)


def policy_reward(mdp: TabularMDP, pi: np.ndarray) -> np.ndarray:
    """r_pi[s] = sum_a pi(a|s) r(s, a) -> [S]."""
    return (pi * mdp.expected_reward).sum(-1)


def evaluate_policy(mdp: TabularMDP, pi: np.ndarray, horizon: int | None = None) -> np.ndarray:
    """V^pi [S]: the discounted return from each state.

    horizon None: the infinite-horizon value by one linear solve, (I - gamma P_pi) V = r_pi on the
    non-terminal states (V = 0 on terminal ones; needs gamma < 1 or episodes that end).
    horizon H: the value of the first H steps, by H backward DP sweeps."""
    return (q_values(mdp, pi, horizon) * pi).sum(-1)


def q_values(mdp: TabularMDP, pi: np.ndarray, horizon: int | None = None) -> np.ndarray:
    """Q^pi [S, A] (infinite horizon, or the first `horizon` steps)."""
    r = mdp.expected_reward
    if horizon is None:
        live = ~mdp.terminal
        P_pi = policy_transition(mdp, pi)[np.ix_(live, live)]
        v = np.zeros(mdp.num_states)
        v[live] = np.linalg.solve(
            np.eye(live.sum()) - mdp.gamma * P_pi, policy_reward(mdp, pi)[live]
        )
        return r + mdp.gamma * mdp.P @ v
    q = np.zeros_like(r)
    for _ in range(horizon):
        q = r + mdp.gamma * mdp.P @ (q * pi).sum(-1)
    return q


def value_iteration(
    mdp: TabularMDP, horizon: int | None = None, tol: float = 1e-12, max_iter: int = 100_000
) -> tuple[np.ndarray, np.ndarray]:
    """(Q* [S, A], a deterministic greedy optimal policy [S, A] one-hot).

    horizon H: H backward sweeps (the greedy policy is then the first step's); otherwise sweeps
    until the largest change is below `tol` (raises if it has not converged)."""
    r = mdp.expected_reward
    q = np.zeros_like(r)
    for _ in range(horizon or max_iter):
        new = r + mdp.gamma * mdp.P @ q.max(-1)
        change = np.abs(new - q).max()
        q = new
        if horizon is None and change < tol:
            break
    else:
        if horizon is None:
            raise RuntimeError(f"value iteration did not converge in {max_iter} sweeps ({change})")
    return q, np.eye(mdp.num_actions)[q.argmax(-1)]


def stationary_distribution(P: np.ndarray) -> np.ndarray:
    """d with d^T P = d^T and sum(d) = 1, for an irreducible chain P [S, S] (least squares)."""
    n = P.shape[0]
    system = np.vstack([P.T - np.eye(n), np.ones((1, n))])
    rhs = np.concatenate([np.zeros(n), [1.0]])
    d = np.linalg.lstsq(system, rhs, rcond=None)[0]
    if (d < -1e-10).any() or np.abs(d @ P - d).max() > 1e-8:
        raise ValueError("the chain has no unique stationary distribution (is it irreducible?)")
    return np.clip(d, 0.0, None) / np.clip(d, 0.0, None).sum()
