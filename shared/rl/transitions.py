"""Independent transitions of a Markov chain: s ~ d (e.g. stationary), s' ~ P(s, .).

The i.i.d. sampling model of finite-time TD analyses: each sample is one transition whose start
state is drawn afresh from d, with no correlation between samples (cf. `sample_markov_chain` in
`rollouts.py` for one correlated trajectory)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from shared.rl.rollouts import _cdf


@functools.partial(jax.jit, static_argnames=("length",))
def sample_iid_transitions(
    key: jax.Array, P: jax.Array, d: jax.Array, length: int
) -> tuple[jax.Array, jax.Array]:
    """`length` independent transitions of the chain P [S, S] with start states drawn from d [S]:
    (s [length], s_next [length]), int32. Inverse-CDF sampling as in `rollouts.py`."""
    k_s, k_next = jax.random.split(key)
    s = _draw_rows(k_s, _cdf(d)[None], jnp.zeros(length, jnp.int32))
    s_next = _draw_rows(k_next, _cdf(P), s)
    return s.astype(jnp.int32), s_next.astype(jnp.int32)


def _draw_rows(key: jax.Array, cdf: jax.Array, rows: jax.Array) -> jax.Array:
    """The draw of `_draw(key, cdf[rows])` (the number of CDF entries <= u) by binary search, so
    that the [len(rows), S] gathered CDF rows are never built (O(log S) per draw, not O(S))."""
    u = jax.random.uniform(key, rows.shape)
    size = cdf.shape[-1]
    lo, hi = jnp.zeros_like(rows), jnp.full_like(rows, size)

    def halve(_, bounds):  # invariant: cdf[row, :lo] <= u < cdf[row, hi:]
        lo, hi = bounds
        mid = (lo + hi) // 2
        below = cdf[rows, jnp.minimum(mid, size - 1)] <= u
        return jnp.where(below & (lo < hi), mid + 1, lo), jnp.where(below | (lo >= hi), hi, mid)

    lo, _ = jax.lax.fori_loop(0, size.bit_length(), halve, (lo, hi))
    return jnp.minimum(lo, size - 1)
