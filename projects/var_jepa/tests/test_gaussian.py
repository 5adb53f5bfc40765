import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.var_jepa.gaussian import gaussian_kl, gaussian_nll, standard_normal_kl


def test_kl_closed_form_matches_monte_carlo():
    mu_q, ls_q, mu_p, ls_p = 0.3, np.log(0.7), -0.4, np.log(1.3)
    z = mu_q + np.exp(ls_q) * np.random.default_rng(0).standard_normal(100_000)
    log_q = -np.asarray(gaussian_nll(z, mu_q, ls_q))
    log_p = -np.asarray(gaussian_nll(z, mu_p, ls_p))
    mc = np.mean(log_q - log_p)
    assert float(gaussian_kl(mu_q, ls_q, mu_p, ls_p)) == pytest.approx(mc, abs=1e-2)


def test_kl_is_zero_at_equality_and_has_finite_gradients():
    mu, ls = jnp.array([0.5, -2.0]), jnp.array([0.1, -1.0])
    np.testing.assert_allclose(gaussian_kl(mu, ls, mu, ls), 0.0, atol=1e-7)
    np.testing.assert_allclose(standard_normal_kl(jnp.zeros(3), jnp.zeros(3)), 0.0, atol=1e-7)
    grads = jax.grad(lambda a: gaussian_kl(*a).sum())((mu, ls, mu + 1, ls - 1))
    assert all(bool(jnp.isfinite(g).all()) for g in grads)


def test_deterministic_limit_is_jepa_mse_up_to_a_constant():
    """sigma -> eps with fixed s: KL = ||mu - m||^2 / (2 s^2) + c(eps, s), c free of mu and m."""
    eps, s = 1e-4, 0.8
    rng = np.random.default_rng(1)
    mu, m = rng.standard_normal((2, 50)), rng.standard_normal((2, 50))
    kl = np.asarray(gaussian_kl(mu, np.log(eps), m, np.log(s)), np.float64)
    const = kl - (mu - m) ** 2 / (2 * s**2)
    expected = np.log(s) - np.log(eps) - 0.5 + eps**2 / (2 * s**2)
    np.testing.assert_allclose(const, expected, rtol=1e-5)
