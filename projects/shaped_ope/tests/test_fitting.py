"""Fitted parts: Monte-Carlo unbiasedness of the (cross-fitted) estimators against the DP truth,
MRDR's closed form against its objective, and FQE against the exact Q."""

import numpy as np
import pytest

from projects.shaped_ope import evaluate, problems, q_models

UNBIASED = ("IS", "PDIS", "DR", "MRDR", "Shaped-heur", "Shaped-learned", "Hybrid", "DR-exact")


@pytest.mark.parametrize("sparsity", ["sparse", "dense"])
def test_cross_fitted_estimators_are_unbiased_within_a_few_standard_errors(sparsity):
    problem = problems.chain_problem(6, sparsity, epsilon=0.5)
    batch = problem.sample(7, 600, 20, 0.1)  # 600 repetitions of n = 20, noisy rewards
    out = evaluate.estimate_all(problem, batch, "tabular")
    for name in UNBIASED:
        v = out[name]
        se = v.std(ddof=1) / np.sqrt(len(v))
        assert abs(v.mean() - problem.truth) < 4 * se + 1e-12, (name, v.mean(), problem.truth)


def test_cancer_estimators_are_unbiased_against_the_rollout_truth():
    problem = problems.cancer_problem(truth_rollouts=20_000)
    out = evaluate.estimate_all(problem, problem.sample(3, 300, 20, 0.0), "linear")
    for name in ("IS", "PDIS", "DR", "Shaped-heur", "Shaped-learned", "Hybrid"):
        v = out[name]
        se = np.sqrt(v.var(ddof=1) / len(v) + problem.truth_se**2)
        assert abs(v.mean() - problem.truth) < 4 * se, (name, v.mean(), problem.truth)


def _mrdr_objective(q, batch, pi, mu, gamma):
    """sum_{i,t} weight q^T Omega q, written out with Omega = diag(1/mu) - 11^T."""
    weight, togo = q_models.mrdr_sample_weights(batch["rho"], batch["r"], batch["alive"], gamma)
    s, a = batch["s"][0, :, :-1], batch["a"][0]
    total = 0.0
    for i, t in zip(*np.nonzero(weight[0]), strict=True):
        vec = pi[s[i, t]] * q[s[i, t]] - togo[0, i, t] * np.eye(2)[a[i, t]]
        omega = np.diag(1 / mu[s[i, t]]) - np.ones((2, 2))
        total += weight[0, i, t] * vec @ omega @ vec
    return total


def test_tabular_mrdr_minimizes_its_objective():
    problem = problems.chain_problem(4, "dense", epsilon=0.5)
    batch = problem.sample(0, 1, 30, 0.0)
    q = q_models.tabular_mrdr(
        batch["s"], batch["a"], batch["r"], batch["rho"], batch["alive"],
        problem.pi, problem.mu, 1.0,
    )[0]  # fmt: skip
    best = _mrdr_objective(q, batch, problem.pi, problem.mu, 1.0)
    rng = np.random.default_rng(0)
    for _ in range(20):
        bumped = q + 0.05 * rng.normal(size=q.shape)
        assert _mrdr_objective(bumped, batch, problem.pi, problem.mu, 1.0) >= best - 1e-9
    # the linear version with one-hot state features solves the same problem
    psi = np.eye(4)[batch["s"]]
    theta = q_models.linear_mrdr(
        psi, batch["a"], batch["r"], batch["rho"], batch["alive"],
        problem.pi[batch["s"]], problem.mu[batch["s"]], 1.0,
    )[0]  # fmt: skip
    lin = _mrdr_objective(theta.T, batch, problem.pi, problem.mu, 1.0)
    assert lin == pytest.approx(best, rel=1e-8, abs=1e-10)


def test_tabular_fqe_recovers_the_exact_time_indexed_q_with_much_data():
    problem = problems.chain_problem(5, "sparse", epsilon=0.2)
    b = problem.sample(1, 1, 40_000, 0.0)
    q = q_models.tabular_fqe(b["s"], b["a"], b["r"], b["alive"], problem.pi, 1.0)[0]
    # compare where the cell has data: early steps of the states near the start
    np.testing.assert_allclose(q[0, 0], problem.q_exact[0, 0], atol=0.02)
    np.testing.assert_allclose(q[2, 1], problem.q_exact[2, 1], atol=0.02)
