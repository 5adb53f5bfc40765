"""Every identity of the spec's section 6 for the Poincaré-ball operations, in float64 (1e-10)
and float32 (1e-5 away from the boundary)."""

from types import SimpleNamespace

import jax
import numpy as np
import pytest

from projects.hypcl import poincare

# Each operation jitted once per shape and dtype (eagerly, every primitive compiles on its own).
P = SimpleNamespace(**{
    name: jax.jit(getattr(poincare, name), static_argnames="c")
    for name in ("project", "mobius_add", "expmap0", "logmap0", "dist", "mobius_matvec",
                 "pairwise_dist")
})  # fmt: skip


@pytest.fixture(autouse=True)
def _float64():
    """float64 inputs stay float64 inside these tests only (float32 inputs stay float32)."""
    with jax.enable_x64(True):
        yield

TOL = {np.float64: 1e-10, np.float32: 1e-5}


def _points(n, d, dtype, c=1.0, radius=0.7, seed=0):
    """n points inside the ball, at norms up to radius/sqrt(c)."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, d))
    v *= (rng.uniform(0, radius, (n, 1)) / np.sqrt(c)) / np.linalg.norm(v, axis=1, keepdims=True)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("c", [1.0, 0.1])
def test_mobius_addition_identities(dtype, c):
    x, y = _points(50, 6, dtype, c), _points(50, 6, dtype, c, seed=1)
    tol = TOL[dtype]
    np.testing.assert_allclose(P.mobius_add(x, np.zeros_like(x), c), x, atol=tol)
    np.testing.assert_allclose(P.mobius_add(np.zeros_like(x), x, c), x, atol=tol)
    np.testing.assert_allclose(P.mobius_add(-x, x, c), 0, atol=tol)
    assert np.all(np.linalg.norm(P.mobius_add(x, y, c), axis=1) < 1 / np.sqrt(c))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_exp_and_log_at_zero_invert_each_other(dtype):
    c, tol = 1.0, TOL[dtype]
    rng = np.random.default_rng(2)
    v = (rng.normal(size=(50, 6)) * 0.5).astype(dtype)
    np.testing.assert_allclose(P.logmap0(P.expmap0(v, c), c), v, rtol=tol, atol=tol)
    y = _points(50, 6, dtype)
    np.testing.assert_allclose(P.expmap0(P.logmap0(y, c), c), y, rtol=tol, atol=tol)
    zero = np.zeros((1, 6), dtype)  # the limit at 0: the identity, no NaN
    np.testing.assert_array_equal(P.expmap0(zero, c), zero)
    np.testing.assert_array_equal(P.logmap0(zero, c), zero)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_distance_is_a_metric_with_the_closed_form_from_zero(dtype):
    c, tol = 2.0, TOL[dtype]
    x, y, z = (_points(200, 5, dtype, c, seed=s) for s in (3, 4, 5))
    np.testing.assert_allclose(P.dist(x, y, c), P.dist(y, x, c), rtol=tol, atol=tol)
    np.testing.assert_allclose(P.dist(x, x, c), 0, atol=10 * tol)
    ny = np.linalg.norm(y.astype(np.float64), axis=1)
    want = 2 / np.sqrt(c) * np.arctanh(np.sqrt(c) * ny)
    np.testing.assert_allclose(P.dist(np.zeros_like(y), y, c), want, rtol=tol)
    assert np.all(P.dist(x, z, c) <= P.dist(x, y, c) + P.dist(y, z, c) + tol)
    # the pairwise form (from inner products) equals the direct one on every pair
    np.testing.assert_allclose(P.pairwise_dist(x[:7], y[:9], c),
                               P.dist(x[:7, None], y[None, :9], c), rtol=tol, atol=tol)  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mobius_matvec_identity_and_positive_scaling(dtype):
    c, tol = 1.0, TOL[dtype]
    x = _points(30, 4, dtype)
    np.testing.assert_allclose(P.mobius_matvec(np.eye(4, dtype=dtype), x, c), x, atol=tol)
    m = np.random.default_rng(6).normal(size=(4, 4)).astype(dtype)
    a, b = P.mobius_matvec(m, x, c), P.mobius_matvec(3.0 * m, x, c)
    cos = np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(cos, 1, atol=tol)  # same geodesic direction from 0
    assert np.all(np.linalg.norm(b, axis=1) > np.linalg.norm(a, axis=1))  # further along it
    np.testing.assert_array_equal(P.mobius_matvec(np.zeros((4, 4), dtype), x, c), 0)


def test_small_curvature_tends_to_euclidean_operations():
    c = 1e-6
    x, y = _points(20, 5, np.float64, 1.0, seed=7), _points(20, 5, np.float64, 1.0, seed=8)
    np.testing.assert_allclose(P.mobius_add(x, y, c), x + y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(P.expmap0(x, c), x, rtol=1e-6)
    np.testing.assert_allclose(P.logmap0(x, c), x, rtol=1e-6)
    np.testing.assert_allclose(P.dist(x, y, c), 2 * np.linalg.norm(x - y, axis=1), rtol=1e-5)


def test_gradients_are_finite_at_the_boundary_after_projection():
    c = 1.0
    x = np.zeros((2, 3), np.float32)
    x[0, 0], x[1, 1] = 5.0, 1.0  # far outside, and exactly on the boundary
    p = P.project(x, c)
    assert np.all(np.linalg.norm(p, axis=1) <= (1 - 3e-3) + 1e-7)
    y = _points(2, 3, np.float32)

    def loss(x):
        q = P.project(x, c)
        return P.dist(q, y, c).sum() + P.logmap0(q, c).sum() + P.mobius_add(q, y, c).sum()

    g = jax.jit(jax.grad(loss))(x)
    assert np.all(np.isfinite(g))
    assert np.all(np.isfinite(jax.jit(jax.grad(lambda v: P.expmap0(v, c).sum()))(np.zeros(3))))
