"""Exact properties of the estimators: zero-mean control variates and unbiasedness by
enumeration, and the special cases that must coincide."""

import numpy as np
import pytest

from projects.shaped_ope import estimators as est
from projects.shaped_ope import evaluate, problems
from projects.shaped_ope.tests.enumerate_mdp import all_trajectories, tiny_mdp
from shared.rl.mdp import evaluate_policy, policy_transition, q_values

H = 3


@pytest.fixture(params=[0, 1, 2])
def tiny(request):
    mdp, pi, mu = tiny_mdp(request.param)
    batch, prob = all_trajectories(mdp, pi, mu, H)
    assert prob.sum() == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(100 + request.param)
    return mdp, pi, mu, batch, prob, rng


def expect(terms, prob):
    return float(terms[0] @ prob)


def test_control_variates_have_zero_mean(tiny):
    mdp, pi, mu, batch, prob, rng = tiny
    phi = rng.normal(size=3) * ~mdp.terminal  # Phi(terminal) = 0
    live_h = np.concatenate([batch["alive"], np.zeros_like(batch["alive"][..., :1])], -1)
    c_phi = est.shaping_cv_terms(batch["rho"], phi[batch["s"]] * live_h, mdp.gamma)
    assert abs(expect(c_phi, prob)) < 1e-12
    q_hat = rng.normal(size=(H, 3, 2)) * ~mdp.terminal[:, None]
    t, s, a = np.arange(H), batch["s"][..., :-1], batch["a"]
    q_sa, v_s = q_hat[t, s, a], (q_hat[t, s] * pi[s]).sum(-1)
    assert abs(expect(est.q_cv_terms(batch["rho"], q_sa, v_s, mdp.gamma), prob)) < 1e-12


def test_potential_not_zero_at_the_horizon_biases_by_gamma_h_e_phi(tiny):
    """The trap: keeping Phi(s_H) on truncated episodes gives mean gamma^H E_pi[Phi(s_H)]."""
    mdp, pi, mu, batch, prob, rng = tiny
    phi = rng.normal(size=3) * ~mdp.terminal
    c_phi = est.shaping_cv_terms(batch["rho"], phi[batch["s"]], mdp.gamma)
    d_h = mdp.d0 @ np.linalg.matrix_power(policy_transition(mdp, pi), H)
    assert expect(c_phi, prob) == pytest.approx(mdp.gamma**H * d_h @ phi, abs=1e-12)
    assert abs(d_h @ phi) > 1e-3


def test_every_unbiased_estimator_has_expectation_v_pi(tiny):
    mdp, pi, mu, batch, prob, rng = tiny
    truth = mdp.d0 @ evaluate_policy(mdp, pi, H)
    rho, r, g = batch["rho"], batch["r"], mdp.gamma
    live_h = np.concatenate([batch["alive"], np.zeros_like(batch["alive"][..., :1])], -1)
    phi = (rng.normal(size=3) * ~mdp.terminal)[batch["s"]] * live_h
    q_hat = rng.normal(size=(H, 3, 2)) * ~mdp.terminal[:, None]
    t, s, a = np.arange(H), batch["s"][..., :-1], batch["a"]
    q_sa, v_s = q_hat[t, s, a], (q_hat[t, s] * pi[s]).sum(-1)
    for terms in (
        est.is_terms(rho, r, g),
        est.pdis_terms(rho, r, g),
        est.dr_terms(rho, r, q_sa, v_s, g),
        est.shaped_terms(rho, r, phi, g),
    ):
        assert expect(terms, prob) == pytest.approx(truth, abs=1e-12)


def test_deterministic_mdp_with_exact_q_gives_zero_variance_dr():
    problem = problems.chain_problem(6, "sparse", epsilon=0.5, p_move=1.0)
    batch = problem.sample(0, 2, 200, 0.0)
    terms = est.dr_terms(
        batch["rho"], batch["r"], *evaluate.exact_q_values(problem, batch), problem.gamma
    )
    assert terms.std() < 1e-12 and terms.mean() == pytest.approx(problem.truth, abs=1e-12)
    assert est.pdis_terms(batch["rho"], batch["r"], 1.0).std() > 0.1  # while PDIS varies


def test_special_cases_coincide():
    rng = np.random.default_rng(0)
    rho = rng.uniform(0.2, 2.0, size=(3, 50, 7))
    r = rng.normal(size=(3, 50, 7))
    # Phi = 0 -> shaped = PDIS
    np.testing.assert_array_equal(
        est.shaped_terms(rho, r, np.zeros((3, 50, 8)), 0.9), est.pdis_terms(rho, r, 0.9)
    )
    # pi = mu -> weights 1, PDIS = on-policy Monte Carlo
    ones = np.ones_like(rho)
    np.testing.assert_array_equal(est.weights(ones)[0], ones)
    g = (0.9 ** np.arange(7) * r).sum(-1)
    np.testing.assert_allclose(est.pdis_terms(ones, r, 0.9), g, rtol=1e-14)
    # reward only at the last step -> PDIS = IS
    last = np.zeros_like(r)
    last[..., -1] = r[..., -1]
    np.testing.assert_allclose(est.pdis_terms(rho, last, 0.9), est.is_terms(rho, last, 0.9))


def test_ols_matches_lstsq_and_reduces_the_in_sample_variance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 60, 3))
    y = x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=(4, 60))
    lam = est.ols_slopes(y, x)
    for i in range(4):
        design = np.concatenate([np.ones((60, 1)), x[i]], 1)
        np.testing.assert_allclose(lam[i], np.linalg.lstsq(design, y[i])[0][1:], rtol=1e-10)
        resid = y[i] - x[i] @ lam[i]
        assert resid.var() <= y[i].var()
    expected = y.mean(-1) - np.einsum("rk,rk->r", x.mean(-2), lam)
    np.testing.assert_allclose(est.cv_estimate(y, x, lam), expected, rtol=1e-12)


def test_q_values_of_the_enumeration_match_dp():
    """The time-indexed exact Q used by DR-exact is Q^pi with H - t steps to go."""
    problem = problems.chain_problem(5)
    np.testing.assert_allclose(
        problem.q_exact[1], q_values(problem.tabular, problem.pi, problem.horizon - 1)
    )


def test_exact_weight_second_moment_matches_the_enumeration(tiny):
    mdp, pi, mu, batch, prob, rng = tiny
    problem = problems.tabular_problem("tiny", mdp, pi, mu, H, np.zeros(3))
    w_end = np.prod(batch["rho"][0], axis=-1)
    assert float(prob @ w_end) == pytest.approx(1.0, abs=1e-12)
    assert problem.weight_second_moment == pytest.approx(float(prob @ w_end**2), rel=1e-12)


def test_dr_matches_the_textbook_form_and_is_pdis_when_q_hat_is_zero(tiny):
    """DR = V(s_0) + sum_t gamma^t w_t (r_t + gamma V(s_{t+1}) - Q(s_t, a_t)) (Jiang & Li),
    computed here directly, equals PDIS - C_Q; with Q-hat = 0 it is PDIS."""
    mdp, pi, mu, batch, prob, rng = tiny
    q_hat = rng.normal(size=(H + 1, 3, 2)) * ~mdp.terminal[:, None]
    q_hat[H] = 0.0  # nothing is bootstrapped beyond the horizon
    s, a, rho, r = batch["s"], batch["a"], batch["rho"], batch["r"]
    t = np.arange(H)
    v = (q_hat[np.arange(H + 1), s] * pi[s]).sum(-1)  # V(s_t), t = 0..H
    w = np.cumprod(rho, -1)
    g = mdp.gamma**t
    textbook = v[..., 0] + (g * w * (r + mdp.gamma * v[..., 1:] - q_hat[t, s[..., :-1], a])).sum(-1)
    q_sa = q_hat[t, s[..., :-1], a]
    np.testing.assert_allclose(est.dr_terms(rho, r, q_sa, v[..., :-1], mdp.gamma), textbook)
    zero = np.zeros_like(q_sa)
    np.testing.assert_array_equal(
        est.dr_terms(rho, r, zero, zero, mdp.gamma), est.pdis_terms(rho, r, mdp.gamma)
    )
