"""Exact expectations by enumerating every trajectory of a tiny MDP (test helper)."""

from __future__ import annotations

import itertools

import numpy as np

from shared.rl.mdp import TabularMDP, absorbing


def tiny_mdp(seed: int, gamma: float = 0.9) -> tuple[TabularMDP, np.ndarray, np.ndarray]:
    """3 states (state 2 terminal), 2 actions, random P and R; random pi and mu (full support)."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(3), size=(3, 2))
    R = rng.normal(size=(3, 2, 3))
    terminal = np.array([False, False, True])
    P, R = absorbing(P, R, terminal)
    mdp = TabularMDP(P, R, np.array([0.6, 0.4, 0.0]), gamma, terminal, "tiny")
    pi = rng.dirichlet(np.ones(2), size=3)
    mu = rng.dirichlet(np.ones(2), size=3)
    return mdp, pi, mu


def all_trajectories(mdp: TabularMDP, pi: np.ndarray, mu: np.ndarray, horizon: int) -> dict:
    """Every (s_0, a_0, ..., s_H) as a batch [1, m, ...] with its probability under mu [m]."""
    S, A = mdp.num_states, mdp.num_actions
    rows = {"s": [], "a": [], "r": [], "prob": []}
    for s0 in range(S):
        for acts in itertools.product(range(A), repeat=horizon):
            for nxt in itertools.product(range(S), repeat=horizon):
                s = (s0, *nxt)
                p = mdp.d0[s0]
                for t in range(horizon):
                    p *= mu[s[t], acts[t]] * mdp.P[s[t], acts[t], s[t + 1]]
                if p == 0.0:
                    continue
                rows["s"].append(s)
                rows["a"].append(acts)
                rows["r"].append([mdp.R[s[t], acts[t], s[t + 1]] for t in range(horizon)])
                rows["prob"].append(p)
    s = np.array(rows["s"])
    a = np.array(rows["a"])
    alive = ~mdp.terminal[s[:, :-1]]
    rho = np.where(alive, pi[s[:, :-1], a] / mu[s[:, :-1], a], 1.0)
    batch = {"s": s, "a": a, "r": np.array(rows["r"]), "alive": alive, "rho": rho}
    batch = {k: v[None] for k, v in batch.items()}
    return batch, np.array(rows["prob"])
