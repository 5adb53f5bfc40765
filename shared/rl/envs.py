"""Tabular environments: random Garnet MDPs, sparse-reward chains, and the ICU-Sepsis MDP."""

from __future__ import annotations

import functools

import numpy as np

from shared.data.resolver import package_file
from shared.rl.mdp import TabularMDP, absorbing

ICU_SEPSIS_TERMINALS = (713, 714, 715)  # death (r = 0), survival (r = +1 on entry), absorbing


def garnet(
    num_states: int,
    num_actions: int = 1,
    branching: int = 4,
    gamma: float = 0.9,
    seed: int = 0,
) -> TabularMDP:
    """A Garnet MDP: each (s, a) moves to `branching` distinct random states with Dirichlet(1)
    probabilities; rewards r(s, a) ~ U(0, 1) (the same for every next state). num_actions = 1
    gives a Markov reward process. No terminal states, uniform start."""
    if not 1 <= branching <= num_states:
        raise ValueError(f"branching={branching} must lie in [1, num_states={num_states}]")
    rng = np.random.default_rng(seed)
    P = np.zeros((num_states, num_actions, num_states))
    for s in range(num_states):
        for a in range(num_actions):
            nxt = rng.choice(num_states, branching, replace=False)
            P[s, a, nxt] = rng.dirichlet(np.ones(branching))
    r = rng.uniform(0.0, 1.0, (num_states, num_actions))
    R = np.broadcast_to(r[:, :, None], P.shape).copy()
    d0 = np.full(num_states, 1.0 / num_states)
    return TabularMDP(P, R, d0, gamma, np.zeros(num_states, bool), f"garnet{num_states}")


def chain(
    num_states: int, p_move: float = 0.9, dense: bool = False, gamma: float = 1.0
) -> TabularMDP:
    """States 0..N-1 in a line; action 0 = left (moves left, stays at 0), action 1 = right (moves
    right w.p. p_move, else stays). Start at 0; the goal N-1 ends the episode.

    Sparse: +1 on entering the goal. Dense: +1/N for each step that moves right, so an episode
    that reaches the goal also collects (N-1)/N."""
    n = num_states
    P = np.zeros((n, 2, n))
    R = np.zeros((n, 2, n))
    for s in range(n):
        P[s, 0, max(s - 1, 0)] = 1.0
        P[s, 1, min(s + 1, n - 1)] += p_move
        P[s, 1, s] += 1.0 - p_move
        if dense and s + 1 < n:
            R[s, 1, s + 1] = 1.0 / n
        elif s + 1 == n - 1:
            R[s, 1, s + 1] = 1.0
    terminal = np.zeros(n, bool)
    terminal[n - 1] = True
    P, R = absorbing(P, R, terminal)
    d0 = np.eye(n)[0]
    return TabularMDP(P, R, d0, gamma, terminal, f"chain{n}{'-dense' if dense else ''}")


@functools.lru_cache(maxsize=1)
def icu_sepsis_arrays() -> dict[str, np.ndarray]:
    """The arrays of `icu-sepsis` 2.0.1 (`dynamics.npz`): tx_mat, r_mat [716, 25, 716], d_0,
    expert_policy [716, 25], state_cluster_centers [716, 47], sofa_scores."""
    path = package_file("icu_sepsis", "envs", "assets", "dynamics.npz")
    with np.load(path) as z:
        return {k: np.array(z[k]) for k in z.files}


def icu_sepsis_expert_policy() -> np.ndarray:
    """The package's expert policy [716, 25]; its rows at the terminal states are all zero, so
    they are set uniform there (any action: the state is absorbing)."""
    pi = icu_sepsis_arrays()["expert_policy"].copy()
    pi[list(ICU_SEPSIS_TERMINALS)] = 1.0 / pi.shape[1]
    return pi


def icu_sepsis(gamma: float = 1.0) -> TabularMDP:
    """ICU-Sepsis (716 states, 25 actions) as an episodic MDP, the package's defaults: gamma 1,
    inadmissible actions handled by 'mean' (tx_mat already holds the mean transition for them),
    reward +1 on entering 714 (survival). 713, 714 and 715 are terminal."""
    z = icu_sepsis_arrays()
    terminal = np.zeros(z["tx_mat"].shape[0], bool)
    terminal[list(ICU_SEPSIS_TERMINALS)] = True
    P, R = absorbing(z["tx_mat"], z["r_mat"], terminal)
    return TabularMDP(P, R, z["d_0"], gamma, terminal, "icu_sepsis")


def restart_on_termination(mdp: TabularMDP) -> TabularMDP:
    """A continuing version for stationary analyses: from a terminal state the next state is
    drawn from d0 (with zero reward), instead of staying there."""
    P, R = mdp.P.copy(), mdp.R.copy()
    P[mdp.terminal] = mdp.d0
    R[mdp.terminal] = 0.0
    return TabularMDP(P, R, mdp.d0, mdp.gamma, np.zeros_like(mdp.terminal), mdp.name + "-restart")
