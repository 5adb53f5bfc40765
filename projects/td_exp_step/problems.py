"""Policy-evaluation problems with linear features and their exact TD quantities (float64 numpy).

A problem is a Markov reward process (P [S, S], expected reward r [S], discount gamma) with its
stationary distribution d [S] and features Phi [S, k] (every row of norm <= 1). From these:

    A = Phi^T D (I - gamma P) Phi,   b = Phi^T D r,   theta* = A^{-1} b   (TD fixed point)
    G = Phi^T D Phi (feature covariance),   omega = lambda_min(G),   D = diag(d)

with D the *stationary* distribution (not uniform over states)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from shared.rl.envs import (
    ICU_SEPSIS_TERMINALS,
    garnet,
    icu_sepsis,
    icu_sepsis_arrays,
    icu_sepsis_expert_policy,
    restart_on_termination,
)
from shared.rl.features import gaussian_features, standardize_columns, unit_norm_rows
from shared.rl.mdp import policy_reward, policy_transition, stationary_distribution


@dataclasses.dataclass(frozen=True)
class LinearTDProblem:
    name: str
    P: np.ndarray  # [S, S] transition matrix of the policy's chain
    r: np.ndarray  # [S] expected reward of a step from s
    d: np.ndarray  # [S] stationary distribution of P
    phi: np.ndarray  # [S, k] features, rows of norm <= 1
    gamma: float  # discount
    reward_noise: float = 0.0  # std of N(0, sigma^2) noise added to each sampled reward

    @functools.cached_property  # [S, S] @ [S, k] products, asked for per schedule and horizon
    def A(self) -> np.ndarray:
        """[k, k] Phi^T D (I - gamma P) Phi."""
        return self.phi.T @ (self.d[:, None] * (self.phi - self.gamma * self.P @ self.phi))

    @property
    def b(self) -> np.ndarray:
        """[k] Phi^T D r."""
        return self.phi.T @ (self.d * self.r)

    @functools.cached_property  # [S, S] @ [S, k] products, asked for per schedule and horizon
    def gram(self) -> np.ndarray:
        """[k, k] G = Phi^T D Phi: the value error of theta is (theta - theta*)^T G (...)."""
        return self.phi.T @ (self.d[:, None] * self.phi)

    @property
    def omega(self) -> float:
        return float(np.linalg.eigvalsh(self.gram)[0])

    @property
    def theta_star(self) -> np.ndarray:
        return np.linalg.solve(self.A, self.b)

    def theta_reg(self, lam: float) -> np.ndarray:
        """Fixed point of regularized TD(0), (A + lam I)^{-1} b (lam = 0: theta*)."""
        return np.linalg.solve(self.A + lam * np.eye(self.A.shape[0]), self.b)

    def expected_update(self, theta: np.ndarray, lam: float = 0.0) -> np.ndarray:
        """E[delta phi(s) - lam theta] with s ~ d, s' ~ P(s, .), by enumeration over (s, s')
        (reward noise has mean zero and drops out)."""
        v = self.phi @ theta
        delta = self.r[:, None] + self.gamma * v[None, :] - v[:, None]  # [s, s']
        weight = self.d[:, None] * self.P  # probability of the pair (s, s')
        return self.phi.T @ (weight * delta).sum(1) - lam * theta


def _checked(problem: LinearTDProblem) -> LinearTDProblem:
    """Stops on what would make theta* or omega meaningless (a feature unseen under d)."""
    if np.linalg.norm(problem.phi, axis=1).max() > 1 + 1e-12:
        raise ValueError(f"{problem.name}: feature rows must have norm <= 1")
    if problem.omega <= 0:
        raise ValueError(f"{problem.name}: Phi^T D Phi is singular (omega = {problem.omega:.3g})")
    return problem


def garnet_problem(
    num_states: int = 100,
    branching: int = 4,
    gamma: float = 0.9,
    feature_dim: int = 8,
    reward_noise: float = 0.0,
    seed: int = 0,
) -> LinearTDProblem:
    """A Garnet MRP (rewards U(0, 1) per state) with Gaussian unit-norm features."""
    mdp = garnet(num_states, 1, branching, gamma, seed)
    P, r = mdp.P[:, 0], mdp.expected_reward[:, 0]
    phi = gaussian_features(num_states, feature_dim, seed=seed + 1)
    return _checked(
        LinearTDProblem(
            f"garnet{num_states}", P, r, stationary_distribution(P), phi, gamma, reward_noise
        )
    )


def icu_sepsis_problem(gamma: float = 0.95) -> LinearTDProblem:
    """ICU-Sepsis under the expert policy, continuing (restart from d0 after a terminal state).

    Rewards are r_pi(s), the expected reward of a step from s under the policy (+1 on entering
    survival). Features: standardized cluster centres plus one-hot indicators of the terminal
    states that the chain visits, all scaled by one factor to max row norm 1 (`unit_norm_rows`).
    Terminal 715 is never entered under the expert policy (d = 0 there), so its indicator would
    be a zero column of Phi^T D Phi and make A singular: it is left out (k = 49, not 50)."""
    mdp = restart_on_termination(icu_sepsis(gamma))
    pi = icu_sepsis_expert_policy()
    P, r = policy_transition(mdp, pi), policy_reward(mdp, pi)
    d = stationary_distribution(P)
    centres = standardize_columns(icu_sepsis_arrays()["state_cluster_centers"])
    visited = [s for s in ICU_SEPSIS_TERMINALS if d[s] > 0]
    indicators = np.zeros((len(d), len(visited)))
    indicators[visited, range(len(visited))] = 1.0
    phi = unit_norm_rows(np.hstack([centres, indicators]))
    return _checked(LinearTDProblem("icu_sepsis", P, r, d, phi, gamma))
