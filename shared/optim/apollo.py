"""APOLLO-Mini (Zhu et al., MLSys 2025): SGD with a tensor-wise scale estimated from Adam run on
a rank-1 random projection of the gradient.

Per matrix gradient G (paper's Algorithm 1 with rank 1 and tensor-wise scaling):
  every `update_gap` steps draw a Gaussian projection P (entries N(0, 1/r)) of G's smaller side;
  R = projection of G; M, V: bias-corrected Adam moments of R; R_adam = M_hat / (sqrt(V_hat) + eps)
  s = ||R_adam|| / ||R||            (one scalar per tensor: "tensor-wise", the Mini variant)
  U = alpha * s * G, alpha = sqrt(128) for the Mini variant
  norm-growth limiter: if ||U_t|| > gamma ||U_{t-1}|| then U_t *= gamma ||U_{t-1}|| / ||U_t||.

Reconstruction (not from the paper's text): P is regenerated from a key folded with the refresh
index instead of being stored (the official code keeps the matrix; rank 1 makes it one vector per
matrix, so the memory difference is that vector); the side projected follows GaLore's "std" rule
(the smaller side), and the limiter is skipped on the first step (no previous norm). Alternatives
considered: storing P (changes only memory by one vector per matrix) and channel-wise scaling
(that is full APOLLO, not Mini).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax


class ApolloState(NamedTuple):
    count: jax.Array  # steps taken, int32
    mu: Any  # per leaf: rank-r first moment of the projected gradient
    nu: Any  # per leaf: rank-r second moment
    last_norm: Any  # per leaf: ||U_{t-1}|| (float32 scalar) for the norm-growth limiter


def _low_shape(shape: tuple[int, ...], rank: int) -> tuple[int, int]:
    if len(shape) != 2:
        raise ValueError(f"APOLLO projects matrices; got shape {shape} (route it to AdamW)")
    a, b = shape
    return (rank, b) if a <= b else (a, rank)


def scale_by_apollo_mini(
    rank: int = 1,
    update_gap: int = 200,
    alpha: float = math.sqrt(128),
    gamma: float = 1.01,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-6,
    seed: int = 0,
) -> optax.GradientTransformation:
    """APOLLO-Mini direction for every leaf (all must be matrices); compose with an LR."""

    def init_fn(params):
        low = lambda p: jnp.zeros(_low_shape(p.shape, rank), p.dtype)  # noqa: E731
        return ApolloState(
            jnp.zeros([], jnp.int32),
            jax.tree.map(low, params),
            jax.tree.map(low, params),
            jax.tree.map(lambda p: jnp.zeros([], jnp.float32), params),
        )

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_int32_increment(state.count)
        t = count.astype(jnp.float32)
        epoch = state.count // update_gap  # which projection is in force
        gs, treedef = jax.tree.flatten(updates)
        ms, vs, ns = (jax.tree.leaves(x) for x in (state.mu, state.nu, state.last_norm))
        out = []
        for i, (g, m, v, last) in enumerate(zip(gs, ms, vs, ns, strict=True)):
            g32 = g.astype(jnp.float32)
            key = jax.random.fold_in(jax.random.fold_in(jax.random.key(seed), i), epoch)
            left = g.shape[0] <= g.shape[1]
            small = g.shape[0] if left else g.shape[1]
            p = jax.random.normal(key, (rank, small), jnp.float32) / math.sqrt(rank)
            r = p @ g32 if left else g32 @ p.T
            m = m + (1 - b1) * (r - m)
            v = v + (1 - b2) * (r * r - v)
            r_adam = (m / (1 - b1**t)) / (jnp.sqrt(v / (1 - b2**t)) + eps)
            s = jnp.linalg.norm(r_adam) / jnp.maximum(jnp.linalg.norm(r), 1e-30)
            u = alpha * s * g32
            norm = jnp.linalg.norm(u)
            limit = gamma * last
            factor = jnp.where((last > 0) & (norm > limit), limit / jnp.maximum(norm, 1e-30), 1.0)
            u = u * factor
            out.append((u.astype(g.dtype), m.astype(g.dtype), v.astype(g.dtype), norm * factor))
        pick = lambda k: jax.tree.unflatten(treedef, [o[k] for o in out])  # noqa: E731
        return pick(0), ApolloState(count, pick(1), pick(2), pick(3))

    return optax.GradientTransformation(init_fn, update_fn)
