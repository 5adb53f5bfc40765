"""Poincaré-ball operations at curvature -c (Ganea et al., 2018; the formulas of geoopt's
stereographic model), written by hand in jax. Points are `[..., d]` arrays inside the ball of
radius 1/sqrt(c); every function works in float32 and float64.

Numerical safety: artanh arguments are clamped to <= 1 - 1e-5 (float32) and norms to >= 1e-15,
and `project` keeps points at <= (1 - eps)/sqrt(c) with eps = 3e-3 in float32 (the spec's margin)
and 1e-5 in float64 (geoopt's). At v = 0 the maps take their limit (identity) through the
clamped norm.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

MIN_NORM = 1e-15


def _eps(x: jax.Array) -> float:
    return 3e-3 if x.dtype == jnp.float32 else 1e-5


def _norm(x: jax.Array) -> jax.Array:
    # sqrt of a clamped square: finite gradients at 0 (jnp.linalg.norm's is NaN there)
    return jnp.sqrt(jnp.maximum(jnp.sum(x * x, axis=-1, keepdims=True), MIN_NORM**2))


def artanh(x: jax.Array) -> jax.Array:
    bound = 1 - (1e-5 if x.dtype == jnp.float32 else 1e-15)
    x = jnp.clip(x, -bound, bound)
    return 0.5 * (jnp.log1p(x) - jnp.log1p(-x))


def project(x: jax.Array, c: float) -> jax.Array:
    """Pulls points outside the ball of radius (1 - eps)/sqrt(c) back onto it."""
    max_norm = (1 - _eps(x)) / jnp.sqrt(c)
    norm = _norm(x)
    return jnp.where(norm > max_norm, x / norm * max_norm, x)


def mobius_add(x: jax.Array, y: jax.Array, c: float) -> jax.Array:
    """x ⊕_c y."""
    xy = jnp.sum(x * y, -1, keepdims=True)
    x2 = jnp.sum(x * x, -1, keepdims=True)
    y2 = jnp.sum(y * y, -1, keepdims=True)
    num = (1 + 2 * c * xy + c * y2) * x + (1 - c * x2) * y
    den = 1 + 2 * c * xy + c**2 * x2 * y2
    return num / jnp.maximum(den, MIN_NORM)


def expmap0(v: jax.Array, c: float) -> jax.Array:
    """Exponential map at the origin: tanh(sqrt(c)|v|) v / (sqrt(c)|v|)."""
    sc = jnp.sqrt(c)
    n = _norm(v)
    return jnp.tanh(sc * n) * v / (sc * n)


def logmap0(y: jax.Array, c: float) -> jax.Array:
    """Logarithmic map at the origin: artanh(sqrt(c)|y|) y / (sqrt(c)|y|)."""
    sc = jnp.sqrt(c)
    n = _norm(y)
    return artanh(sc * n) * y / (sc * n)


def dist(x: jax.Array, y: jax.Array, c: float) -> jax.Array:
    """Geodesic distance (2/sqrt(c)) artanh(sqrt(c)|(-x) ⊕_c y|): [...] (last axis reduced)."""
    sc = jnp.sqrt(c)
    return (2 / sc) * artanh(sc * _norm(mobius_add(-x, y, c)))[..., 0]


def mobius_matvec(m: jax.Array, x: jax.Array, c: float) -> jax.Array:
    """M ⊗_c x for m [d_out, d_in] and x [..., d_in]:
    (1/sqrt(c)) tanh(|Mx|/|x| artanh(sqrt(c)|x|)) Mx/|Mx|; Mx = 0 maps to 0."""
    sc = jnp.sqrt(c)
    mx = x @ m.T
    xn, mxn = _norm(x), _norm(mx)
    out = jnp.tanh(mxn / xn * artanh(sc * xn)) * mx / (mxn * sc)
    return jnp.where(jnp.all(mx == 0, -1, keepdims=True), 0.0, out)


def hyperbolic_linear(m: jax.Array, b: jax.Array, x: jax.Array, c: float) -> jax.Array:
    """(M ⊗_c x) ⊕_c b, projected back into the ball."""
    return project(mobius_add(project(mobius_matvec(m, x, c), c), b, c), c)


def pairwise_dist(x: jax.Array, y: jax.Array, c: float) -> jax.Array:
    """d_c between every row of x [b, d] and of y [k, d]: [b, k], from the inner products alone
    (|(-x) ⊕_c y| expands into <x, y>, |x|^2 and |y|^2, so no [b, k, d] tensor is built)."""
    xy = x @ y.T
    x2 = jnp.sum(x * x, -1)[:, None]
    y2 = jnp.sum(y * y, -1)[None, :]
    a = 1 - 2 * c * xy + c * y2  # coefficient of -x in (-x) ⊕ y
    b = 1 - c * x2  # coefficient of y
    num2 = a * a * x2 + b * b * y2 - 2 * a * b * xy
    den = jnp.maximum(1 - 2 * c * xy + c**2 * x2 * y2, MIN_NORM)
    norm = jnp.sqrt(jnp.maximum(num2, MIN_NORM**2)) / den
    return (2 / jnp.sqrt(c)) * artanh(jnp.sqrt(c) * norm)
