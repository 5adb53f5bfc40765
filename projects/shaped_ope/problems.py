"""The OPE problems: environment, target pi, behaviour mu, horizon, truth, and the features
the fitted parts use (potentials and Q-hat). Sampling returns a batch of [R, n] trajectories.

Two kinds: tabular MDPs of shared/rl (chains, ICU-Sepsis; truth by exact finite-horizon DP) and
the cancer simulator of shared/rl/cancer.py (continuous state; truth by on-policy rollouts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import numpy as np

from shared.rl import cancer
from shared.rl.envs import chain, icu_sepsis, icu_sepsis_arrays, icu_sepsis_expert_policy
from shared.rl.mdp import TabularMDP, evaluate_policy, q_values, value_iteration
from shared.rl.rollouts import sample_episodes


@dataclasses.dataclass(frozen=True)
class Problem:
    name: str
    horizon: int
    gamma: float
    truth: float  # V^pi of the H-step objective
    truth_se: float  # its Monte-Carlo standard error (0 for exact DP)
    num_actions: int
    sample: Callable  # (seed, reps, n, reward_noise) -> batch dict of [R, n, ...] arrays
    pot_features: Callable  # batch -> psi [R, n, H + 1, k] (0 at terminal states and at t = H)
    heuristic: Callable  # batch -> Phi [R, n, H + 1] (0 at terminal states and at t = H)
    q_features: Callable  # (batch, kind) -> psi [R, n, H + 1, k] for a linear Q
    tabular: TabularMDP | None = None  # the MDP when the states are discrete
    pi: np.ndarray | None = None  # [S, A] (tabular problems)
    mu: np.ndarray | None = None
    q_exact: np.ndarray | None = None  # [H, S, A]: Q^pi with H - t steps to go at step t
    weight_second_moment: float = float("nan")  # E_mu[w_{H-1}^2], exact (heavy-tail diagnostic)


def _truncate(values: np.ndarray, alive: np.ndarray) -> np.ndarray:
    """Values [R, n, H + 1(, k)] of s_0..s_H set to 0 at terminal states and at t = H: a
    potential must vanish there for the shaping CV to have mean zero (see estimators)."""
    live = np.concatenate([alive, np.zeros_like(alive[..., :1])], axis=-1)
    return values * (live[..., None] if values.ndim > live.ndim else live)


def tabular_problem(
    name: str,
    mdp: TabularMDP,
    pi: np.ndarray,
    mu: np.ndarray,
    horizon: int,
    state_feature: np.ndarray,  # [S] in [0, 1]: progress-like score (heuristic potential)
) -> Problem:
    truth = float(mdp.d0 @ evaluate_policy(mdp, pi, horizon))
    q_exact = np.stack([q_values(mdp, pi, horizon - t) for t in range(horizon)])
    # E_mu[w^2] by DP: one step multiplies by sum_a mu rho^2 P = sum_a (pi^2 / mu) P; rho = 1
    # after termination (terminal rows keep P, an absorbing self-loop).
    step = np.einsum("sa,sat->st", pi**2 / mu, mdp.P)
    step[mdp.terminal] = mdp.P[mdp.terminal, 0]
    second = float(mdp.d0 @ np.linalg.matrix_power(step, horizon) @ np.ones(mdp.num_states))

    def sample(seed: int, reps: int, n: int, noise: float) -> dict:
        ep = sample_episodes(jax.random.key(seed), mdp, mu, reps * n, horizon, noise)
        s, a = ep["states"].astype(np.int64), ep["actions"].astype(np.int64)
        alive = ep["alive"]
        # after termination the absorbing steps carry no weight: rho = 1 there
        rho = np.where(alive, pi[s[:, :-1], a] / mu[s[:, :-1], a], 1.0)
        batch = {"s": s, "a": a, "r": ep["rewards"], "alive": alive, "rho": rho}
        return {k: v.reshape(reps, n, *v.shape[1:]) for k, v in batch.items()}

    def pot_features(batch):
        f = np.stack([np.ones_like(state_feature), state_feature], -1)[batch["s"]]
        return _truncate(f, batch["alive"])

    def heuristic(batch):
        return _truncate(state_feature[batch["s"]], batch["alive"])

    def q_features(batch, kind):
        if kind != "misspecified":
            raise ValueError(f"{name}: tabular problems fit kind '{kind}' in closed form")
        # Misspecified Q-hat: a constant per action, i.e. features without the state (for the
        # chain: missing the distance to the goal).
        return _truncate(np.ones(batch["s"].shape + (1,)), batch["alive"])

    return Problem(
        name, horizon, mdp.gamma, truth, 0.0, mdp.num_actions, sample, pot_features,
        heuristic, q_features, mdp, pi, mu, q_exact, second,
    )  # fmt: skip


def chain_problem(
    num_states: int, sparsity: str = "sparse", epsilon: float = 0.5, p_move: float = 0.9
) -> Problem:
    """Spec section 5: pi = right w.p. 0.9, mu = (1 - eps) pi + eps uniform, H = 2N.
    sparsity: 'sparse' (+1 at the goal), 'dense' (+1/N per move right) or 'mixed' (the average
    of the two reward tables). Heuristic potential: progress s/(N - 1), chosen a priori because
    it turns the sparse goal reward into a dense +1/(N - 1) per move right."""
    sparse, dense = chain(num_states, p_move), chain(num_states, p_move, dense=True)
    weight = {"sparse": 0.0, "mixed": 0.5, "dense": 1.0}[sparsity]
    R = (1 - weight) * sparse.R + weight * dense.R
    mdp = TabularMDP(sparse.P, R, sparse.d0, 1.0, sparse.terminal, f"chain{num_states}")
    pi = np.tile([0.1, 0.9], (num_states, 1))
    mu = (1 - epsilon) * pi + epsilon * 0.5
    progress = np.arange(num_states) / (num_states - 1.0)
    return tabular_problem(f"chain{num_states}-{sparsity}", mdp, pi, mu, 2 * num_states, progress)


def icu_problem(horizon: int = 20) -> Problem:
    """ICU-Sepsis: pi = 0.9 value-iteration optimal + 0.1 expert, mu = 0.9 expert + 0.1
    uniform (covers pi), H = 20. Heuristic potential: 1 - SOFA/24 (a clinical prior on survival,
    chosen a priori, not fitted); learned potential features: (1, 1 - SOFA/24)."""
    mdp = icu_sepsis()
    expert = icu_sepsis_expert_policy()
    _, optimal = value_iteration(mdp)
    pi = 0.9 * optimal + 0.1 * expert
    mu = 0.9 * expert + 0.1 / mdp.num_actions
    score = 1.0 - icu_sepsis_arrays()["sofa_scores"] / 24.0
    return tabular_problem("icu_sepsis", mdp, pi, mu, horizon, score)


def cancer_problem(
    target_dose: float = 0.7, behaviour_dose: float = 0.5, truth_rollouts: int = 100_000
) -> Problem:
    """Cancer simulator, H = 30: pi doses w.p. 0.7 at every step, mu w.p. 0.5 (a suggested
    setting; a deterministic 'always dose' target would leave one trajectory in 2^30 with a
    nonzero weight). Truth by on-policy rollouts. Heuristic potential: the terminal bonus if the
    episode ended now, 10 (P*_0 - P*_t) (it telescopes the sparse terminal reward into steps)."""
    params = cancer.CancerParams()
    h = params.horizon
    on = cancer.rollout(np.random.default_rng(12345), target_dose, truth_rollouts, params)
    g = on["rewards"].sum(1)
    truth, truth_se = float(g.mean()), float(g.std(ddof=1) / np.sqrt(len(g)))
    size0 = params.p0 + params.q0
    pi_a = np.array([1 - target_dose, target_dose])
    mu_a = np.array([1 - behaviour_dose, behaviour_dose])

    def sample(seed: int, reps: int, n: int, noise: float) -> dict:
        rng = np.random.default_rng(seed)
        ep = cancer.rollout(rng, behaviour_dose, reps * n, params)
        r = ep["rewards"] + noise * rng.standard_normal(ep["rewards"].shape)
        a = ep["actions"].astype(np.int64)
        batch = {"obs": ep["obs"], "a": a, "r": r, "alive": np.ones(a.shape, bool)}
        batch["rho"] = pi_a[a] / mu_a[a]
        batch = {k: v.reshape(reps, n, *v.shape[1:]) for k, v in batch.items()}
        shape = batch["obs"].shape[:-1] + (2,)
        batch["pi_obs"], batch["mu_obs"] = (
            np.broadcast_to(pi_a, shape),
            np.broadcast_to(mu_a, shape),
        )
        return batch

    def pot_features(batch):
        x = batch["obs"]
        f = np.stack([np.ones(x.shape[:-1]), cancer.tumour_size(x) / size0, x[..., 0]], -1)
        return _truncate(f, batch["alive"])

    def heuristic(batch):
        phi = params.terminal_scale * (size0 - cancer.tumour_size(batch["obs"]))
        return _truncate(phi, batch["alive"])

    def q_features(batch, kind):
        x = batch["obs"]
        cols = [np.ones(x.shape[:-1]), x[..., 5] / h]
        if kind == "linear":  # the full state; 'misspecified' keeps only (1, t)
            cols += [x[..., 0], x[..., 1] / 10, x[..., 2] / 10, x[..., 3] / 10, x[..., 4]]
        return _truncate(np.stack(cols, -1), batch["alive"])

    second = float((pi_a**2 / mu_a).sum() ** h)  # state-independent policies: exact
    return Problem(
        "cancer", h, 1.0, truth, truth_se, 2, sample, pot_features, heuristic, q_features,
        weight_second_moment=second,
    )  # fmt: skip
