import jax
import numpy as np
import pytest

from shared.rl.envs import (
    chain,
    garnet,
    icu_sepsis,
    icu_sepsis_arrays,
    icu_sepsis_expert_policy,
    restart_on_termination,
)
from shared.rl.features import gaussian_features, unit_norm_rows
from shared.rl.mdp import (
    evaluate_policy,
    policy_transition,
    q_values,
    stationary_distribution,
    value_iteration,
)
from shared.rl.rollouts import sample_episodes, sample_markov_chain

RIGHT = np.tile([0.1, 0.9], (10, 1))


def test_chain_value_by_dp_equals_the_closed_form():
    """Sparse chain, always right: the goal is reached with certainty; with gamma the value is
    E[gamma^(T-1)], T ~ the sum of 9 geometric(0.9) waiting times."""
    mdp = chain(10, p_move=0.9)
    mdp = type(mdp)(mdp.P, mdp.R, mdp.d0, 0.95, mdp.terminal, mdp.name)
    pi = np.tile([0.0, 1.0], (10, 1))
    per_step = 0.9 * 0.95 / (1 - 0.95 * 0.1)  # E[gamma^waiting], waiting ~ geometric(0.9)
    assert evaluate_policy(mdp, pi)[0] == pytest.approx(per_step**9 / 0.95, rel=1e-12)


def test_finite_horizon_values_converge_to_the_infinite_horizon_solve():
    mdp = garnet(30, num_actions=3, gamma=0.9, seed=1)
    pi = np.random.default_rng(0).dirichlet(np.ones(3), 30)
    np.testing.assert_allclose(q_values(mdp, pi, horizon=400), q_values(mdp, pi), atol=1e-12)
    q = q_values(mdp, pi)  # Bellman equation
    np.testing.assert_allclose(q, mdp.expected_reward + 0.9 * mdp.P @ (q * pi).sum(-1), atol=1e-12)


def test_value_iteration_is_optimal_and_greedy():
    mdp = garnet(20, num_actions=4, gamma=0.8, seed=2)
    q, greedy = value_iteration(mdp)
    np.testing.assert_allclose(q_values(mdp, greedy), q, atol=1e-10)
    rng = np.random.default_rng(0)
    for _ in range(5):
        assert (evaluate_policy(mdp, rng.dirichlet(np.ones(4), 20)) <= q.max(-1) + 1e-12).all()


def test_icu_sepsis_values_match_the_package_readme():
    mdp = icu_sepsis()
    expert = icu_sepsis_expert_policy()
    q, optimal = value_iteration(mdp)
    value = lambda pi: mdp.d0 @ evaluate_policy(mdp, pi)
    assert value(optimal) == pytest.approx(0.88, abs=0.01)  # README: optimal 0.88
    assert value(expert) == pytest.approx(0.78, abs=0.01)  # expert 0.78
    assert value(np.full((716, 25), 1 / 25)) == pytest.approx(0.78, abs=0.01)  # random 0.78
    continuing = restart_on_termination(mdp)
    P = policy_transition(continuing, expert)
    np.testing.assert_allclose(P.sum(1), 1.0, atol=1e-12)
    with pytest.raises(ValueError, match=r"policy rows \[713, 714, 715\]"):
        policy_transition(mdp, icu_sepsis_arrays()["expert_policy"])


def test_stationary_distribution_and_markov_sampler():
    mdp = garnet(50, seed=3)
    P = policy_transition(mdp, np.ones((50, 1)))
    d = stationary_distribution(P)
    np.testing.assert_allclose(d @ P, d, atol=1e-12)
    assert d.sum() == pytest.approx(1.0)
    path = np.asarray(sample_markov_chain(jax.random.key(0), P, 0, 200_000))
    freq = np.bincount(path, minlength=50) / len(path)
    assert 0.5 * np.abs(freq - d).sum() < 0.02


def test_sampled_returns_match_dp_within_standard_errors():
    mdp = chain(10)
    episodes = sample_episodes(jax.random.key(0), mdp, RIGHT, 20_000, 20)
    returns = episodes["rewards"].sum(1)
    truth = mdp.d0 @ evaluate_policy(mdp, RIGHT, horizon=20)
    assert abs(returns.mean() - truth) < 4 * returns.std() / np.sqrt(len(returns))
    alive = episodes["alive"]
    assert (episodes["rewards"][~alive] == 0).all() and alive[:, 0].all()
    done = ~alive[:, -1]
    assert (episodes["states"][done, -1] == 9).all()  # the goal is absorbing


def test_features_are_unit_norm():
    phi = gaussian_features(100, 8)
    np.testing.assert_allclose(np.linalg.norm(phi, axis=1), 1.0)
    scaled = unit_norm_rows(np.arange(12.0).reshape(4, 3))
    assert np.linalg.norm(scaled, axis=1).max() == pytest.approx(1.0)
