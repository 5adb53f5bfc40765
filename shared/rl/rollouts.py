"""Sampling trajectories of tabular MDPs in JAX: `lax.scan` over time, `vmap` over episodes."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from shared.rl.mdp import TabularMDP, check_policy


def _cdf(p) -> jax.Array:
    """Cumulative probabilities along the last axis, last entry forced to 1 (float32 sums)."""
    c = jnp.cumsum(jnp.asarray(p, jnp.float32), axis=-1)
    return c.at[..., -1].set(1.0)


def _draw(key: jax.Array, cdf: jax.Array) -> jax.Array:
    """Inverse-CDF sampling: one uniform per draw (a Gumbel draw would need one per outcome).
    Outcomes of probability 0 are never drawn: their CDF step is empty."""
    u = jax.random.uniform(key, cdf.shape[:-1])
    return jnp.minimum(jnp.sum(cdf <= u[..., None], axis=-1), cdf.shape[-1] - 1)


@functools.partial(jax.jit, static_argnames=("num_episodes", "horizon"))
def _episodes(key, cdf_P, R, cdf_d0, cdf_pi, terminal, noise, num_episodes: int, horizon: int):
    def episode(key):
        k0, kt = jax.random.split(key)
        s0 = _draw(k0, cdf_d0)

        def step(carry, k):
            s, alive = carry
            ka, ks, kr = jax.random.split(k, 3)
            a = _draw(ka, cdf_pi[s])
            s2 = _draw(ks, cdf_P[s, a])
            r = R[s, a, s2] + noise * jax.random.normal(kr)
            r = jnp.where(alive, r, 0.0)
            next_alive = alive & ~terminal[s2]
            return (s2, next_alive), (s, a, r, alive)

        (s_last, _), (s, a, r, alive) = jax.lax.scan(
            step, (s0, ~terminal[s0]), jax.random.split(kt, horizon)
        )
        return jnp.append(s, s_last), a, r, alive

    return jax.vmap(episode)(jax.random.split(key, num_episodes))


def sample_episodes(
    key: jax.Array,
    mdp: TabularMDP,
    pi: np.ndarray,
    num_episodes: int,
    horizon: int,
    reward_noise: float = 0.0,
) -> dict[str, np.ndarray]:
    """Episodes of `pi` [S, A] truncated at `horizon` steps.

    Returns numpy arrays: states [n, H + 1] (s_0 .. s_H), actions [n, H], rewards [n, H] (with
    N(0, reward_noise^2) added on live steps), alive [n, H] (False once a terminal state has been
    entered: those steps sit in the absorbing state with zero reward)."""
    check_policy(mdp, pi)
    s, a, r, alive = _episodes(
        key,
        _cdf(mdp.P),
        jnp.asarray(mdp.R, jnp.float32),
        _cdf(mdp.d0),
        _cdf(pi),
        jnp.asarray(mdp.terminal),
        jnp.float32(reward_noise),
        num_episodes,
        horizon,
    )
    return {
        "states": np.asarray(s),
        "actions": np.asarray(a),
        "rewards": np.asarray(r, np.float64),
        "alive": np.asarray(alive),
    }


@functools.partial(jax.jit, static_argnames=("length",))
def sample_markov_chain(key: jax.Array, P: jax.Array, s0: jax.Array, length: int) -> jax.Array:
    """One trajectory of the chain P [S, S] from s0: states [length + 1] (s_0 .. s_length)."""
    cdf = _cdf(P)

    def step(s, k):
        s2 = _draw(k, cdf[s])
        return s2, s2

    _, path = jax.lax.scan(step, s0, jax.random.split(key, length))
    return jnp.concatenate([jnp.asarray(s0)[None], path])
