"""Every config's LLaMA builds; each problem's gradient is keyed by the step; what the smoke
run through `launch/run.py` measured; the paper config (Llama-3.2-1B dimensions, window sharded
over 8 devices) builds with eval_shape."""

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from projects.paso import experiment, problems
from projects.paso.diffusion import DiffusionConfig, diffusion_problem
from projects.paso.paso import PasoConfig, paso, sequential
from shared.config import ConfigError, apply_overrides

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(experiment.CONFIGS))
def test_every_config_builds(name):
    cfg = experiment.CONFIGS[name]
    assert cfg.steps >= 1
    problems.llama_config(cfg.llama.size, cfg.llama.seq_len)


def test_bad_configs_are_rejected():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError, match="windows"):
        apply_overrides(cfg, ["windows=()"])
    with pytest.raises(ConfigError, match="agg"):
        apply_overrides(cfg, ["agg='median'"])
    with pytest.raises(ValueError, match="llama.size"):
        problems.llama_config("huge", 64)


def _same_trajectory(prob, T=5, P=4):
    """PASO at τ = 0 against the sequential run with SGD; differs if a batch were not keyed by t.
    SGD, not the problem's Adam: Adam's first steps are ±lr·sign(g), so a near-zero gradient
    entry whose last bits differ between the vmapped window and the single gradient can move a
    parameter by ~lr (measured 2e-6 on the LLaMA embedding); test_paso covers Adam's exactness
    on a problem without such entries. Float32 rounding over 5 steps: 1e-6 relative."""
    tx, g = optax.sgd(0.1), prob.grad_fn
    ref, _, _ = jax.jit(lambda p, d: sequential(tx, g, p, d, T))(prob.params, prob.data)
    cfg = PasoConfig(P, tol=0.0, ema_decay=1.0)
    res = jax.jit(lambda p, d: paso(tx, g, p, d, T, cfg))(prob.params, prob.data)
    for a, b in zip(jax.tree.leaves(res.params), jax.tree.leaves(ref)):
        assert float(jnp.max(jnp.abs(a - b))) <= 1e-6 * float(jnp.max(jnp.abs(b)))
    g0 = g(prob.params, jnp.int32(0), prob.data)
    g0_again = g(prob.params, jnp.int32(0), prob.data)
    g1 = g(prob.params, jnp.int32(1), prob.data)
    same = [bool(jnp.array_equal(a, b)) for a, b in zip(*map(jax.tree.leaves, (g0, g0_again)))]
    moved = [bool(jnp.array_equal(a, b)) for a, b in zip(*map(jax.tree.leaves, (g0, g1)))]
    return all(same), not all(moved)


def test_problems_are_keyed_by_step():
    small = DiffusionConfig(hidden=(32,), steps=5, train_size=256, eval_size=64)
    assert _same_trajectory(diffusion_problem(small, 0)) == (True, True)
    mlp = problems.MLPConfig(hidden=(16,), steps=5, train_size=256, test_size=64)
    assert _same_trajectory(problems.mlp_problem(mlp, 0)) == (True, True)
    # the LLaMA gradient on synthetic windows (the corpus is tested in tests/ of shared)
    lm = problems.LMConfig(seq_len=16, batch_size=2)
    graphdef, params = problems.llama_model(lm, 0)
    windows = np.random.default_rng(0).integers(0, 257, (8, 17)).astype(np.int32)
    data = {"windows": jnp.asarray(windows), "perm": jnp.arange(8, dtype=jnp.int32)}
    prob = problems.Problem(
        "llama", params, data, problems.lm_grad_fn(graphdef, 2), optax.adam(1e-3),
        None, "",
    )  # fmt: skip
    assert _same_trajectory(prob) == (True, True)


def test_paper_config_builds_with_eval_shape():
    """Llama-3.2-1B dimensions (about 0.97 B parameters with the byte vocabulary), P = 8 slots
    sharded over the 8-device mesh: the whole PASO solve traces, nothing is allocated."""
    cfg = experiment.CONFIGS["paper"]
    lm = cfg.llama
    graphdef, abstract = nnx.split(nnx.eval_shape(lambda: problems.llama_module(lm, 0)))
    n = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(abstract))
    assert 0.9e9 < n < 1.1e9
    data = {
        "windows": jax.ShapeDtypeStruct((4096, lm.seq_len + 1), jnp.int32),
        "perm": jax.ShapeDtypeStruct((4096,), jnp.int32),
    }
    mesh = experiment.window_mesh(cfg.devices)
    assert mesh is not None and mesh.shape["window"] == 8
    pcfg = PasoConfig(cfg.windows[0], cfg.tol, cfg.ema_decay, cfg.agg)
    grad = problems.lm_grad_fn(graphdef, lm.batch_size)
    out = jax.eval_shape(
        lambda p, d: paso(optax.adam(lm.lr), grad, p, d, lm.steps, pcfg, mesh=mesh),
        abstract,
        data,
    )
    assert jax.tree.structure(out.params) == jax.tree.structure(abstract)
    assert out.anchors.shape == (lm.steps + 1,)


def test_smoke_run_through_the_entry_point(smoke_run):
    proc, tmp_path = smoke_run("paso")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = json.loads((tmp_path / "results.json").read_text())
    for p, label in ((4, "paso4"), (8, "paso8_fixed")):
        assert 1 <= m[f"mnist_mlp/{label}/K"] <= 30
        assert m[f"mnist_mlp/{label}/speedup"] == 30 / m[f"mnist_mlp/{label}/K"]
        assert 1 <= m[f"mnist_mlp/{label}/evals_per_step"] <= p
        anchors = np.load(tmp_path / "anchors.npz")[label]
        assert anchors[-1] == 30 and (np.diff(anchors) >= 1).all() and (np.diff(anchors) <= p).all()
    assert 0.0 < m["mnist_mlp/seq/metric"] <= 1.0
