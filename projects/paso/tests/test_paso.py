"""PASO against the sequential trajectory: exactness at τ = 0, K <= T, closed forms of the error
scale and the tolerance EMA, and the 8-device shard_map window against the 1-device vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from projects.paso.experiment import window_mesh
from projects.paso.paso import PasoConfig, paso, sequential

T = 60


def toy_problem():
    """A tanh MLP regression, minibatch of step t = rows 8t .. 8t+7 (mod 64): stochastic and
    nonlinear, so a wrong step index or a stale gradient changes the trajectory."""
    x = jax.random.normal(jax.random.key(0), (64, 5))
    y = jnp.sin(x.sum(-1))
    params = {
        "w1": 0.5 * jax.random.normal(jax.random.key(1), (5, 16)),
        "b1": jnp.zeros(16),
        "w2": 0.5 * jax.random.normal(jax.random.key(2), (16,)),
    }

    def loss(p, t, d):
        idx = (t * 8 + jnp.arange(8)) % 64
        pred = jnp.tanh(d["x"][idx] @ p["w1"] + p["b1"]) @ p["w2"]
        return jnp.mean((pred - d["y"][idx]) ** 2)

    return params, {"x": x, "y": y}, jax.grad(loss)


OPTIMIZERS = {
    "sgd": optax.sgd(0.05),
    "momentum": optax.sgd(0.05, momentum=0.9),
    # a schedule: the LR of accepted step t must be schedule(t) however many rollbacks happened
    "adam": optax.adam(optax.linear_schedule(1e-2, 1e-3, T)),
}


def max_rel(a, b) -> float:
    return max(
        float(jnp.max(jnp.abs(x - y)) / jnp.max(jnp.abs(y)))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b))
    )


def solve(tx, cfg, mesh=None, ckpts=()):
    params, data, grad = toy_problem()
    return jax.jit(lambda p, d: paso(tx, grad, p, d, T, cfg, mesh=mesh, checkpoint_steps=ckpts))(
        params, data
    )


@pytest.mark.parametrize("name", list(OPTIMIZERS))
@pytest.mark.parametrize("window", [1, 8])
def test_tolerance_zero_gives_the_sequential_trajectory(name, window):
    tx = OPTIMIZERS[name]
    params, data, grad = toy_problem()
    ckpts = (0, 17, 30, T)
    seq, seq_state, seq_cks = jax.jit(
        lambda p, d: sequential(tx, grad, p, d, T, checkpoint_steps=ckpts)
    )(params, data)
    res = solve(tx, PasoConfig(window, tol=0.0, ema_decay=1.0), ckpts=ckpts)
    assert max_rel(res.params, seq) <= 1e-6
    assert max_rel(res.checkpoints, seq_cks) <= 1e-6
    counts = [x for x in jax.tree.leaves(res.opt_state) if x.dtype == jnp.int32]
    assert all(int(c) == T for c in counts)  # Adam/schedule counts of the anchor = T
    # Moments/traces are sums of T gradients whose last bits depend on the vmap batch size
    # (P slots vs 1): float32 rounding of about T·eps = 60 · 1.2e-7 ≈ 7e-6 relative.
    moments = [x for x in jax.tree.leaves(res.opt_state) if x.dtype != jnp.int32]
    ref = [x for x in jax.tree.leaves(seq_state) if x.dtype != jnp.int32]
    for m, r in zip(moments, ref):
        assert float(jnp.max(jnp.abs(m - r))) <= 1e-5 * max(float(jnp.max(jnp.abs(r))), 1e-30)
    # the trajectory really moved (a frozen solver would also "match" at rel 0)
    assert max_rel(seq, params) > 1e-2
    if window == 1:
        assert int(res.iterations) == T and int(res.grad_evals) == T


@pytest.mark.parametrize("window,tol", [(1, 1e-3), (4, 0.0), (4, 1.0), (16, 1e-3), (16, 1e12)])
def test_iterations_never_exceed_T_and_every_iteration_advances(tol, window):
    res = solve(OPTIMIZERS["adam"], PasoConfig(window, tol=tol, ema_decay=0.9))
    K = int(res.iterations)
    anchors = np.asarray(res.anchors)
    assert 1 <= K <= T
    steps = np.diff(anchors[: K + 1])
    assert anchors[K] == T and (steps >= 1).all() and (steps <= window).all()
    assert (anchors[K + 1 :] == -1).all()
    # evaluations: every window slot that is a real step (< T) is one gradient
    expected = sum(min(window, T - int(b)) for b in anchors[:K])
    assert int(res.grad_evals) == expected


def test_huge_fixed_tolerance_accepts_whole_windows():
    res = solve(OPTIMIZERS["sgd"], PasoConfig(8, tol=1e30, ema_decay=1.0))
    assert int(res.iterations) == -(-T // 8) and int(res.grad_evals) == T


@pytest.mark.parametrize("agg,expected_tol", [("mean", 62500.0), ("middle", 70000.0)])
def test_error_scale_and_tolerance_ema_closed_form(agg, expected_tol):
    """f = θ²/2, SGD η = 0.1, θ0 = 1, P = T = 2. One window from guesses (1, 1, 1): rollout
    0.9 (err 1e6·0.1² = 1e4), then 0.9 − 0.1·g(guess 1) = 0.8 (err 1e6·0.2² = 4e4). τ0 = 1e5
    accepts both: K = 1, θ = 0.8 (the exact θ_2 is 0.81), τ = 0.5·1e5 + 0.5·agg."""
    grad = jax.grad(lambda p, t, d: 0.5 * p["x"] ** 2)
    cfg = PasoConfig(2, tol=1e5, ema_decay=0.5, agg=agg)
    res = paso(optax.sgd(0.1), grad, {"x": jnp.float32(1.0)}, {}, 2, cfg)
    assert int(res.iterations) == 1 and int(res.grad_evals) == 2
    np.testing.assert_allclose(float(res.params["x"]), 0.8, rtol=1e-6)
    np.testing.assert_allclose(float(res.tol), expected_tol, rtol=1e-5)
    # a tolerance below the first error accepts one step per window: the exact answer
    tight = paso(optax.sgd(0.1), grad, {"x": jnp.float32(1.0)}, {}, 2, PasoConfig(2, tol=5e3))
    assert int(tight.iterations) == 2
    np.testing.assert_allclose(float(tight.params["x"]), 0.81, rtol=1e-6)


@pytest.mark.parametrize("tol,decay", [(0.0, 1.0), (1e-3, 0.99)])
def test_eight_devices_agree_with_one(tol, decay):
    assert len(jax.devices()) == 8, "the root conftest provides 8 CPU devices"
    mesh = window_mesh(8)
    cfg = PasoConfig(16, tol=tol, ema_decay=decay)
    one = solve(OPTIMIZERS["adam"], cfg)
    eight = solve(OPTIMIZERS["adam"], cfg, mesh=mesh)
    assert int(one.iterations) == int(eight.iterations)
    assert int(one.grad_evals) == int(eight.grad_evals)
    assert max_rel(eight.params, one.params) <= 1e-6
    with pytest.raises(ValueError, match="multiple of the mesh axis"):
        solve(OPTIMIZERS["adam"], PasoConfig(12), mesh=mesh)


def test_bad_configs_name_the_field():
    with pytest.raises(ValueError, match="window"):
        PasoConfig(0)
    with pytest.raises(ValueError, match="agg"):
        PasoConfig(4, agg="median")
    with pytest.raises(ValueError, match="ema_decay"):
        PasoConfig(4, ema_decay=1.5)
