"""Closed forms of linear TD(0): the expected update, the fixed points and the step sizes."""

import jax
import numpy as np
import pytest

from projects.td_exp_step import problems
from projects.td_exp_step.schedules import (
    Schedule,
    coefficient_arrays,
    exponential_log_alpha,
    step_sizes,
)
from projects.td_exp_step.td import run_td


@pytest.fixture(scope="module", params=[0.9, 0.99], ids=["gamma0.9", "gamma0.99"])
def garnet(request):  # the spec's two discounts
    return problems.garnet_problem(num_states=30, feature_dim=5, gamma=request.param, seed=2)


def test_expected_td_update_by_enumeration_is_b_minus_A_theta(garnet):
    """E[delta phi(s) | theta], s ~ d, s' ~ P(s, .), summed pair by pair, equals b - A theta."""
    p = garnet
    theta = np.random.default_rng(0).normal(size=5)
    total = np.zeros(5)
    for s in range(30):
        for s2 in range(30):
            delta = p.r[s] + p.gamma * p.phi[s2] @ theta - p.phi[s] @ theta
            total += p.d[s] * p.P[s, s2] * delta * p.phi[s]
    np.testing.assert_allclose(total, p.b - p.A @ theta, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p.expected_update(theta), p.b - p.A @ theta, rtol=0, atol=1e-12)


def test_theta_star_solves_A_theta_b_and_expected_recursion_converges(garnet):
    p = garnet
    np.testing.assert_allclose(p.A @ p.theta_star, p.b, atol=1e-12)
    theta = np.zeros(5)
    for _ in range(20_000):  # theta <- theta + eta (b - A theta), small constant eta
        theta = theta + 0.5 * p.expected_update(theta)
    np.testing.assert_allclose(theta, p.theta_star, atol=1e-9)


def test_gamma_zero_fixed_point_is_the_d_weighted_regression(garnet):
    p = problems.LinearTDProblem("g0", garnet.P, garnet.r, garnet.d, garnet.phi, 0.0)
    w = np.sqrt(p.d)
    regression = np.linalg.lstsq(w[:, None] * p.phi, w * p.r, rcond=None)[0]
    np.testing.assert_allclose(p.theta_star, regression, atol=1e-12)


def test_omega_uses_the_stationary_distribution(garnet):
    p = garnet
    assert not np.allclose(p.d, 1 / 30)  # a uniform D would give another omega
    assert p.omega == pytest.approx(np.linalg.eigvalsh(p.phi.T @ np.diag(p.d) @ p.phi)[0], 1e-12)
    assert np.abs(p.d @ p.P - p.d).max() < 1e-12 and p.d.sum() == pytest.approx(1.0, 1e-12)


@pytest.mark.parametrize("horizon", [10, 1000, 100_000])
@pytest.mark.parametrize("beta", [1.0, 3.0])
def test_exponential_schedule_hits_eta0_beta_over_T_and_decreases(horizon, beta):
    sched = Schedule("exponential", 0.7, beta)
    t = np.arange(horizon + 1)
    eta = step_sizes(sched, horizon, omega=0.1, t=t)
    assert eta[0] == 0.7
    assert abs(eta[-1] - 0.7 * beta / horizon) < 1e-12
    assert (np.diff(eta) < 0).all()
    # alpha depends on (beta, T) only: not on eta0, not on omega
    other = Schedule("exponential", 0.01, beta).coefficients(horizon, omega=5.0)
    assert other[1] == sched.coefficients(horizon, 0.1)[1] == exponential_log_alpha(beta, horizon)
    assert exponential_log_alpha(beta, horizon) != exponential_log_alpha(beta, 2 * horizon)


def test_inverse_t_starts_at_one_and_depends_on_c_over_omega():
    t = np.arange(50)
    a = step_sizes(Schedule("inv_t", 20.0, omega_scale=10.0), 50, 0.1, t)
    b = step_sizes(Schedule("inv_t", 2.0, omega_scale=1.0), 50, 0.1, t)
    assert a[0] == pytest.approx(1.0, 1e-15)
    np.testing.assert_allclose(a, 1.0 / (1.0 + 1.0 * t / 20.0), rtol=1e-12)  # omega_u t / c
    np.testing.assert_allclose(a, b, rtol=1e-12)  # x10 omega = c / 10: tuning c absorbs it
    np.testing.assert_allclose(
        step_sizes(Schedule("inv_sqrt", 0.5), 50, 0.1, t), 0.5 / np.sqrt(t + 1), rtol=1e-12
    )


def test_regularized_fixed_point(garnet):
    p = garnet
    for lam in (1e-1, 1e-2):
        theta_lam = p.theta_reg(lam)
        np.testing.assert_allclose(p.expected_update(theta_lam, lam), 0.0, atol=1e-12)
    gaps = [np.linalg.norm(p.theta_reg(lam) - p.theta_star) for lam in (1e-2, 1e-3, 1e-4, 1e-5)]
    assert all(a > b for a, b in zip(gaps, gaps[1:], strict=False)) and gaps[-1] < 1e-3
    ratios = np.array(gaps) / np.array([1e-2, 1e-3, 1e-4, 1e-5])  # O(lambda) bias
    assert ratios.max() / ratios.min() < 1.2


def test_scan_equals_a_plain_loop(garnet):
    """run_td (float32 scan over (seed, schedule)) vs a float64 loop over the same samples,
    plain, regularized, and Polyak-Ruppert averaged."""
    p, horizon = garnet, 200
    rng = np.random.default_rng(1)
    s = rng.integers(0, 30, (3, horizon))
    s2 = rng.integers(0, 30, (3, horizon))
    noise = 0.5 * rng.normal(size=(3, horizon))
    scheds = [Schedule("constant", 0.3), Schedule("exponential", 1.0, 1.0, lam=0.05)]
    coef = coefficient_arrays(scheds, horizon, p.omega)
    eta = np.stack([step_sizes(sc, horizon, p.omega, np.arange(horizon)) for sc in scheds], 1)
    f32 = lambda x: np.asarray(x, np.float32)
    for average in (False, True):
        got = run_td(
            f32(p.phi),
            f32(p.r),
            p.gamma,
            s,
            s2,
            f32(noise),
            f32(eta),
            f32(coef["lam"]),
            average=average,
        )
        for n in range(3):
            for k, sc in enumerate(scheds):
                theta, avg = np.zeros(5), np.zeros(5)
                for t in range(horizon):
                    f, f2 = p.phi[s[n, t]], p.phi[s2[n, t]]
                    delta = p.r[s[n, t]] + noise[n, t] + p.gamma * f2 @ theta - f @ theta
                    theta = theta + eta[t, k] * (delta * f - sc.lam * theta)
                    avg += (theta - avg) / (t + 1)
                want = avg if average else theta
                np.testing.assert_allclose(np.asarray(got)[n, k], want, atol=2e-5)
    assert jax.numpy.asarray(got).dtype == np.float32
