"""Closed-form Gaussian terms of the Var-T-JEPA ELBO (diagonal Gaussians, elementwise)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

LOG_2PI = float(jnp.log(2 * jnp.pi))


def gaussian_kl(
    mu_q: jax.Array, log_sigma_q: jax.Array, mu_p: jax.Array, log_sigma_p: jax.Array
) -> jax.Array:
    """KL(N(mu_q, sigma_q^2) || N(mu_p, sigma_p^2)) per element:
    log s - log sigma + (sigma^2 + (mu - m)^2) / (2 s^2) - 1/2."""
    var_ratio = jnp.exp(2 * (log_sigma_q - log_sigma_p))
    return (
        log_sigma_p
        - log_sigma_q
        + 0.5 * var_ratio
        + 0.5 * jnp.square(mu_q - mu_p) * jnp.exp(-2 * log_sigma_p)
        - 0.5
    )


def standard_normal_kl(mu: jax.Array, log_sigma: jax.Array) -> jax.Array:
    """KL(N(mu, sigma^2) || N(0, 1)) per element."""
    return gaussian_kl(mu, log_sigma, jnp.zeros_like(mu), jnp.zeros_like(log_sigma))


def gaussian_nll(x: jax.Array, mean: jax.Array, log_sigma: jax.Array) -> jax.Array:
    """-log N(x; mean, sigma^2) per element."""
    return 0.5 * LOG_2PI + log_sigma + 0.5 * jnp.square(x - mean) * jnp.exp(-2 * log_sigma)


def reparameterize(key: jax.Array | None, mu: jax.Array, log_sigma: jax.Array) -> jax.Array:
    """z = mu + sigma * eps; the mean when `key` is None (evaluation)."""
    if key is None:
        return mu
    return mu + jnp.exp(log_sigma) * jax.random.normal(key, mu.shape, mu.dtype)
