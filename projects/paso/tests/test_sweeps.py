"""The optimizer switch (closed forms of SGD, torch-style momentum and Adam on f = θ²/2), the
sweep tables' runs, and the τ × P grid behind the T/K-vs-P figure on hand-made runs."""

import json

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from projects.paso import experiment, sweeps, tables
from projects.paso.optimizers import make_optimizer
from shared.config import ConfigError, apply_overrides


def two_steps(tx) -> tuple[float, float]:
    """θ1, θ2 of `tx` on f = θ²/2 (g = θ) from θ0 = 1."""
    theta, state, out = jnp.float32(1.0), None, []
    state = tx.init(theta)
    for _ in range(2):
        updates, state = tx.update(theta, state, theta)
        theta = optax.apply_updates(theta, updates)
        out.append(float(theta))
    return tuple(out)


def test_optimizers_follow_their_closed_forms():
    # SGD: θ ← 0.9 θ. torch SGD(momentum=0.9): buf1 = 1, θ1 = 0.9; buf2 = 0.9 + 0.9, θ2 = 0.72.
    np.testing.assert_allclose(two_steps(make_optimizer("sgd", 0.1)), (0.9, 0.81), rtol=1e-6)
    np.testing.assert_allclose(two_steps(make_optimizer("momentum", 0.1)), (0.9, 0.72), rtol=1e-6)
    # Adam (β 0.9, 0.999, ε 1e-8): the first step is lr·sign(g); the second from the moments
    m2, v2 = 0.9 * 0.1 + 0.1 * 0.9, 0.999 * 0.001 + 0.001 * 0.81
    second = 0.9 - 0.1 * (m2 / (1 - 0.9**2)) / (np.sqrt(v2 / (1 - 0.999**2)) + 1e-8)
    np.testing.assert_allclose(two_steps(make_optimizer("adam", 0.1)), (0.9, second), rtol=1e-5)
    with pytest.raises(ValueError, match="optimizer"):
        make_optimizer("rmsprop", 0.1)


def test_config_switch_uses_the_problems_lr():
    cfg = apply_overrides(
        experiment.CONFIGS["cpu"],
        [
            "problem='ackley'",
            "optimizer='momentum'",
            "momentum=0.5",
            "ackley.dim=10",
            "ackley.lr=2.0",
        ],
    )
    prob = experiment.build_problem(cfg)
    g = prob.grad_fn(prob.params, jnp.int32(0), prob.data)
    state = prob.tx.init(prob.params)
    first, state = prob.tx.update(g, state, prob.params)
    second, _ = prob.tx.update(g, state, prob.params)  # buf = 0.5 g + g
    np.testing.assert_allclose(first["x"], -2.0 * g["x"], rtol=1e-6)
    np.testing.assert_allclose(second["x"], -2.0 * 1.5 * g["x"], rtol=1e-6)
    # the default stays the paper's Adam at the problem's lr: the first step is −lr·sign(g)
    adam = experiment.build_problem(apply_overrides(cfg, ["optimizer='adam'"]))
    up, _ = adam.tx.update(g, adam.tx.init(prob.params), prob.params)
    np.testing.assert_allclose(up["x"], -2.0 * jnp.sign(g["x"]), rtol=1e-4)
    with pytest.raises(ConfigError, match="optimizer"):
        apply_overrides(cfg, ["optimizer='rmsprop'"])


def test_sweep_tables_run_what_their_notes_say():
    tol, ema, opt = (tables.TABLES[n] for n in ("tolerance", "ema", "optimizers"))
    # τ × P: one run per (problem, τ, seed) holds every window, with the EMA off
    assert len(tol.runs()) == len(sweeps.SWEEP_PROBLEMS) * len(sweeps.TOLS) * len(tol.seeds)
    assert all("ema_decay=1.0" in over for over, _ in tol.runs())
    # the EMA table's 'τ fixed' rows are the tolerance table's τ = 1e-5 runs (seeds 0 and 1)
    shared_runs = set(tol.runs()) & set(ema.runs())
    assert len(shared_runs) == len(sweeps.SWEEP_PROBLEMS) * 2
    assert all("tol=1e-05" in over for over, _ in shared_runs)
    # three optimizers on the MNIST MLP, each with its own lr
    assert {over for over, _ in opt.runs()} == {
        ("mnist_mlp.lr=0.1", "optimizer='sgd'", "problem='mnist_mlp'"),
        ("mnist_mlp.lr=0.01", "optimizer='momentum'", "problem='mnist_mlp'"),
        ("mnist_mlp.lr=0.001", "optimizer='adam'", "problem='mnist_mlp'"),
    }


def fake_runs(tmp_path):
    """Two seeds of τ = 1e-3 on the MLP: T/K = P / 2 (seed 0) and P / 4 (seed 1); PASO's metric
    0.01·P below the sequential 0.9."""
    workdirs = {}
    for seed, div in ((0, 2.0), (1, 4.0)):
        res = {"mnist_mlp/seq/metric": 0.9}
        for p in sweeps.SWEEP_WINDOWS:
            res |= {
                f"mnist_mlp/paso{p}/speedup": p / div,
                f"mnist_mlp/paso{p}/metric": 0.9 - p / 100,
            }
        w = tmp_path / f"run{seed}"
        w.mkdir()
        (w / "config.json").write_text(json.dumps({"problem": "mnist_mlp", "tol": 1e-3}))
        (w / "results.json").write_text(json.dumps(res))
        workdirs[(("problem='mnist_mlp'", "tol=0.001"), seed)] = w
    return workdirs


def test_sweep_grid_and_figure(tmp_path):
    workdirs = fake_runs(tmp_path)
    grid = sweeps.sweep_grid(sweeps._runs(workdirs), "mnist_mlp")
    i = sweeps.TOLS.index(1e-3)
    P = np.asarray(sweeps.SWEEP_WINDOWS, float)
    np.testing.assert_allclose(grid["speedup"][i], P * (1 / 2 + 1 / 4) / 2)
    np.testing.assert_allclose(grid["speedup_std"][i], P * (1 / 2 - 1 / 4) / 2)
    np.testing.assert_allclose(grid["gap"][i], -P / 100, atol=1e-12)
    others = [k for k in range(len(sweeps.TOLS)) if k != i]
    assert np.isnan(grid["speedup"][others]).all()  # no run of those τ: nothing drawn
    assert np.isnan(sweeps.sweep_grid(sweeps._runs(workdirs), "ackley")["speedup"]).all()
    out = tmp_path / "results"
    out.mkdir()
    (path,) = sweeps.t_over_k_figure(tables.TABLES["tolerance"], workdirs, out)
    assert path.name == "t_over_k.png" and path.read_bytes()[:4] == b"\x89PNG"
