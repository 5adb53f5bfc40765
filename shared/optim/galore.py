"""GaLore (Zhao et al., ICML 2024): Adam on a low-rank projection of each matrix gradient.

Paper's Algorithm 2 / official `galore_torch` (projection type "std"), for a gradient G:
every `update_gap` steps, P = the top-r singular vectors of G on its SMALLER side (torch [out, in]:
right vectors when out >= in); R = projection of G (r x larger side); Adam (bias-corrected) on R;
the update is alpha * (R_adam projected back). Adam moments carry over when P is refreshed.

Why not `optax.contrib.galore`: in optax 0.2.8 it projects the LARGER side when rows >= cols (it
keeps min(r*n, m*r) state), the opposite of the paper, so it is a different optimizer; this file
follows the paper. In Flax's [in, out] layout the smaller side is the one projected, ties go to
the input axis as in the torch code.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax


class GaLoreState(NamedTuple):
    count: jax.Array  # steps taken, int32
    projector: Any  # per leaf: [small side, r]
    mu: Any  # per leaf: low-rank first moment
    nu: Any  # per leaf: low-rank second moment


def _left(shape: tuple[int, ...]) -> bool:
    """True when axis 0 (the input axis in Flax) is projected: it is the smaller or equal side."""
    if len(shape) != 2:
        raise ValueError(f"GaLore projects matrices; got shape {shape} (route it to AdamW)")
    return shape[0] <= shape[1]


def _shapes(shape: tuple[int, ...], rank: int) -> tuple[tuple[int, int], tuple[int, int]]:
    a, b = shape
    r = min(rank, a, b)
    return ((a, r), (r, b)) if _left(shape) else ((b, r), (a, r))


def scale_by_galore(
    rank: int, update_gap: int = 200, alpha: float = 0.25, b1=0.9, b2=0.999, eps=1e-8
) -> optax.GradientTransformation:
    """GaLore direction for every leaf (all must be matrices); compose with a learning rate."""
    if rank < 1 or update_gap < 1:
        raise ValueError(f"rank={rank} and update_gap={update_gap} must be positive")

    def init_fn(params):
        def proj(p):
            return jnp.zeros(_shapes(p.shape, rank)[0], p.dtype)

        def low(p):
            return jnp.zeros(_shapes(p.shape, rank)[1], p.dtype)

        return GaLoreState(
            jnp.zeros([], jnp.int32),
            jax.tree.map(proj, params),
            jax.tree.map(low, params),
            jax.tree.map(low, params),
        )

    def update_fn(updates, state, params=None):
        del params
        refresh = state.count % update_gap == 0
        count = optax.safe_int32_increment(state.count)
        t = count.astype(jnp.float32)

        def leaf(g, p, m, v):
            left = _left(g.shape)
            g32 = g.astype(jnp.float32)
            r = p.shape[1]

            def fresh():
                u, _, vt = jnp.linalg.svd(g32, full_matrices=False)
                return (u[:, :r] if left else vt[:r].T).astype(p.dtype)

            p = jax.lax.cond(refresh, fresh, lambda: p)
            p32 = p.astype(jnp.float32)
            low = p32.T @ g32 if left else g32 @ p32
            m = m + (1 - b1) * (low - m)
            v = v + (1 - b2) * (low * low - v)
            n = (m / (1 - b1**t)) / (jnp.sqrt(v / (1 - b2**t)) + eps)
            full = p32 @ n if left else n @ p32.T
            return (alpha * full).astype(g.dtype), p, m.astype(g.dtype), v.astype(g.dtype)

        gs, treedef = jax.tree.flatten(updates)
        parts = (jax.tree.leaves(x) for x in (state.projector, state.mu, state.nu))
        out = [leaf(*args) for args in zip(gs, *parts, strict=True)]
        pick = lambda i: jax.tree.unflatten(treedef, [o[i] for o in out])  # noqa: E731
        return pick(0), GaLoreState(count, pick(1), pick(2), pick(3))

    return optax.GradientTransformation(init_fn, update_fn)
