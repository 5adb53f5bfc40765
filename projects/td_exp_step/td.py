"""Linear TD(0) in JAX: `lax.scan` over time, every (seed, schedule) pair advanced in one step.

    delta_t     = r_t + gamma phi(s'_t)^T theta_t - phi(s_t)^T theta_t
    theta_{t+1} = theta_t + eta_t (delta_t phi(s_t) - lam theta_t)     (lam = 0: standard TD(0))

Regularized TD(0) (lam > 0) is a Reconstruction: the paper names a regularized TD(0) for Markovian
samples but its form is not known here; the L2 form above (fixed point (A + lam I)^{-1} b) is the
natural one. The alternative considered, a projection onto a ball, is what the paper says it
avoids. The output is the last iterate theta_T; with `average` it is instead the Polyak-Ruppert
average of theta_1 .. theta_T (used only by the inverse-sqrt baseline, which is labelled so).

All seeds share the features; every schedule of one seed sees the same transitions (common random
numbers), so differences between schedules are not sampling noise between seeds. Iterates are
float32; the exact quantities they are compared with are float64 (problems.py)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from shared.rl.rollouts import sample_markov_chain
from shared.rl.transitions import sample_iid_transitions


@functools.partial(jax.jit, static_argnames=("average",))
def run_td(
    phi: jax.Array,
    r: jax.Array,
    gamma: float,
    s: jax.Array,
    s_next: jax.Array,
    noise: jax.Array,
    eta: jax.Array,
    lam: jax.Array,
    average: bool = False,
) -> jax.Array:
    """phi [S, k], r [S]; s, s_next [N, T] int; noise [N, T] (added to r[s]); eta [T, K] step
    sizes; lam [K]. Returns theta_T (or its running average) [N, K, k], from theta_0 = 0."""
    n, k, num = s.shape[0], phi.shape[1], eta.shape[1]
    theta0 = jnp.zeros((n, num, k), jnp.float32)

    def step(carry, x):
        theta, avg, t = carry
        s_t, s2_t, noise_t, eta_t = x
        f, f2 = phi[s_t], phi[s2_t]  # [N, k]
        v = jnp.einsum("nKk,nk->nK", theta, f)
        v2 = jnp.einsum("nKk,nk->nK", theta, f2)
        delta = (r[s_t] + noise_t)[:, None] + gamma * v2 - v  # [N, K]
        update = delta[:, :, None] * f[:, None, :] - lam[None, :, None] * theta
        theta = theta + eta_t[None, :, None] * update
        if average:  # avg_t = mean(theta_1 .. theta_t)
            avg = avg + (theta - avg) / (t + 1.0)
        return (theta, avg, t + 1.0), None

    xs = (s.T, s_next.T, noise.T, eta)
    (theta, avg, _), _ = jax.lax.scan(
        step, (theta0, theta0 if average else None, jnp.float32(0.0)), xs
    )
    return avg if average else theta


def sample_transitions(
    key: jax.Array, P: np.ndarray, d: np.ndarray, regime: str, num_seeds: int, length: int
) -> tuple[jax.Array, jax.Array]:
    """(s, s_next) [num_seeds, length]. 'iid': s ~ d independently, s' ~ P(s, .). 'markov': one
    trajectory per seed started from s_0 ~ d (already stationary, so no burn-in), s_{t+1} = s'_t."""
    k_start, k_path = jax.random.split(key)
    keys = jax.random.split(k_path, num_seeds)
    P32, d32 = jnp.asarray(P, jnp.float32), jnp.asarray(d, jnp.float32)
    if regime == "iid":
        return jax.vmap(lambda k: sample_iid_transitions(k, P32, d32, length))(keys)
    if regime == "markov":
        starts, _ = jax.vmap(lambda k: sample_iid_transitions(k, P32, d32, 1))(
            jax.random.split(k_start, num_seeds)
        )
        paths = jax.vmap(lambda k, s0: sample_markov_chain(k, P32, s0[0], length))(keys, starts)
        return paths[:, :-1].astype(jnp.int32), paths[:, 1:].astype(jnp.int32)
    raise ValueError(f"regime must be 'iid' or 'markov', got {regime!r}")
