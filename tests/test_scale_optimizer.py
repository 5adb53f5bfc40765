"""SCALE optimizer: the spec's "tests that matter" (invariants, NumPy transcriptions of the
official PyTorch update, routing, state bytes, the 1-D AdamW and the schedule)."""

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from shared.models.llama import SIZES, Llama
from shared.optim import optimizer_memory, scale, scale_by_column_norm, scale_labels, scale_schedule
from shared.optim.labels import path_name


def _rng(seed=0):
    return np.random.default_rng(seed)


def _colnorm(lr=1.0, **kw):
    return optax.chain(scale_by_column_norm(**kw), optax.scale(lr))


def _torch_update(g: np.ndarray, col_dim: int, lr: float) -> np.ndarray:
    """NumPy transcription of the official step on a torch-layout weight (wd = 0)."""
    s = np.maximum(np.sqrt(np.mean(g.astype(np.float64) ** 2, axis=col_dim, keepdims=True)), 1e-8)
    return -lr * g / s


def test_every_output_column_has_rms_lr():
    g = jnp.asarray(_rng().normal(size=(48, 20)) * _rng(1).uniform(0.1, 10, size=(1, 20)))
    tx = _colnorm(lr=0.3)
    u, _ = tx.update({"mlp": {"kernel": g}}, tx.init({"mlp": {"kernel": g}}))
    rms = np.sqrt(np.mean(np.asarray(u["mlp"]["kernel"]) ** 2, axis=0))
    np.testing.assert_allclose(rms, 0.3, rtol=1e-5)


def test_axes_match_the_torch_code_for_linear_and_embedding():
    w_torch = _rng(2).normal(size=(24, 40))  # Linear [out, in]
    e = _rng(3).normal(size=(50, 16))  # Embedding [vocab, d] in both frameworks
    tree = {
        "layers": {"0": {"self_attn": {"q_proj": {"kernel": jnp.asarray(w_torch.T)}}}},
        "embed_tokens": {"embedding": jnp.asarray(e)},
    }
    tx = _colnorm(lr=0.01)
    u, _ = tx.update(tree, tx.init(tree))
    ours = np.asarray(u["layers"]["0"]["self_attn"]["q_proj"]["kernel"])
    np.testing.assert_allclose(ours, _torch_update(w_torch, 1, 0.01).T, rtol=1e-5, atol=1e-9)
    emb = np.asarray(u["embed_tokens"]["embedding"])
    np.testing.assert_allclose(emb, _torch_update(e, 0, 0.01), rtol=1e-5, atol=1e-9)
    # the other axis is a different update: the test can tell them apart
    assert not np.allclose(ours, _torch_update(w_torch, 0, 0.01).T, rtol=1e-3)


def test_dense_general_output_projection_reduces_heads_and_head_dim():
    g = jnp.asarray(_rng(4).normal(size=(3, 4, 10)))  # [H, hd, d]
    tx = _colnorm()
    u, _ = tx.update({"o_proj": {"kernel": g}}, tx.init({"o_proj": {"kernel": g}}))
    rms = np.sqrt(np.mean(np.asarray(u["o_proj"]["kernel"]) ** 2, axis=(0, 1)))
    np.testing.assert_allclose(rms, 1.0, rtol=1e-5)


def test_scale_invariance_and_momentum_forms_agree():
    g = {"head": {"kernel": jnp.asarray(_rng(5).normal(size=(16, 30)))}}
    tx = _colnorm()
    u1, _ = tx.update(g, tx.init(g))
    u2, _ = tx.update(jax.tree.map(lambda x: 7.5 * x, g), tx.init(g))
    chex.assert_trees_all_close(u1, u2, rtol=1e-5)

    grads = [
        {"head": {"kernel": jnp.asarray(_rng(10 + i).normal(size=(16, 30)))}} for i in range(5)
    ]
    variants = {
        "fused": scale_by_column_norm(momentum=0.9),
        "ema": optax.chain(optax.ema(0.9, debias=False), scale_by_column_norm()),
        "ema_debias": optax.chain(optax.ema(0.9, debias=True), scale_by_column_norm()),
        "trace": optax.chain(optax.trace(0.9), scale_by_column_norm()),
    }
    outs = {}
    for name, t in variants.items():
        state, seq = t.init(grads[0]), []
        for gr in grads:
            u, state = t.update(gr, state)
            seq.append(u)
        outs[name] = seq
    for name in ("ema", "ema_debias", "trace"):
        chex.assert_trees_all_close(outs["fused"], outs[name], rtol=2e-5, atol=1e-6)
    # the stored state is the lerp EMA (no bias correction), as the official code
    state = variants["fused"].init(grads[0])
    for gr in grads[:2]:
        _, state = variants["fused"].update(gr, state)
    expected = 0.1 * 0.9 * grads[0]["head"]["kernel"] + 0.1 * grads[1]["head"]["kernel"]
    np.testing.assert_allclose(state.momentum["head"]["kernel"], expected, rtol=1e-5)


def test_an_all_zero_column_gives_a_zero_update_not_nan():
    g = _rng(6).normal(size=(12, 5))
    g[:, 2] = 0.0
    tx = _colnorm()
    u, _ = tx.update({"mlp": jnp.asarray(g)}, tx.init({"mlp": jnp.asarray(g)}))
    u = np.asarray(u["mlp"])
    assert np.all(np.isfinite(u)) and np.all(u[:, 2] == 0.0)


@pytest.fixture(scope="module")
def nano_params():
    model = nnx.eval_shape(lambda: Llama(SIZES["nano"], rngs=nnx.Rngs(0)))
    return nnx.state(model, nnx.Param)


def test_routing_labels_and_state_bytes(nano_params):
    labels = jax.tree_util.tree_leaves_with_path(scale_labels(nano_params))
    shapes = dict(
        (path_name(p), x.shape) for p, x in jax.tree_util.tree_leaves_with_path(nano_params)
    )
    by = {
        lab: [path_name(p) for p, lab2 in labels if lab2 == lab] for lab in ("main", "last", "oned")
    }
    assert by["last"] == ["lm_head/kernel"]
    assert set(by["oned"]) == {n for n, s in shapes.items() if len(s) == 1}
    assert "embed_tokens/embedding" in by["main"] and len(by["main"]) == 1 + 7 * 2
    oned = sum(math.prod(shapes[n]) for n in by["oned"])
    mem = optimizer_memory(scale(1e-3, 100), nano_params)
    head = math.prod(shapes["lm_head/kernel"])
    assert mem.state_bytes - mem.counter_bytes == 4 * (head + 2 * oned)
    assert mem.counter_bytes <= 32  # step counters only
    mem16 = optimizer_memory(scale(1e-3, 100), nano_params, jnp.bfloat16)
    assert mem16.state_bytes - mem16.counter_bytes == 2 * (head + 2 * oned)


def _np_schedule(s, peak, warmup, total, floor=0.1):
    if s < warmup:
        return peak * s / warmup
    prog = (s - warmup) / (total - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(prog, 1.0))))


def test_schedule_values():
    sched = scale_schedule(2e-3, 100)
    assert float(sched(0)) == 0.0
    np.testing.assert_allclose(float(sched(10)), 2e-3, rtol=1e-6)
    np.testing.assert_allclose(float(sched(100)), 2e-4, rtol=1e-5)
    for s in (3, 37, 99):
        np.testing.assert_allclose(float(sched(s)), _np_schedule(s, 2e-3, 10, 100), rtol=1e-5)


@pytest.mark.parametrize("steps,warmup", [(1, 0), (10, 2)])
def test_one_d_adamw_matches_the_official_update(steps, warmup):
    """eps before the bias correction; LR = adam_lr * lr(t) / peak, t from 0 (torch's
    LambdaLR before its first scheduler.step), bias correction t from 1."""
    peak, adam_lr, total, eps = 1e-3, 0.02, 20, 1e-8
    rng = _rng(7)
    p0 = rng.normal(size=(6,)).astype(np.float32)
    # gradients ~1e-7: sqrt(v) is near eps, where the eps placement matters
    grads = [rng.normal(size=(6,)).astype(np.float32) * 1e-7 for _ in range(steps)]
    tx = scale(peak, total, warmup_steps=warmup, adam_lr=adam_lr)
    params = {"norm": {"weight": jnp.asarray(p0)}}
    state = tx.init(params)
    for g in grads:
        u, state = tx.update({"norm": {"weight": jnp.asarray(g)}}, state, params)
        params = optax.apply_updates(params, u)
    p, m, v = p0.astype(np.float64), np.zeros(6), np.zeros(6)
    p_optax = p.copy()  # optax.adam's placement: eps added after the bias correction
    for k, g in enumerate(grads, start=1):
        lr = adam_lr * _np_schedule(k - 1, peak, warmup, total) / peak
        m = m + 0.1 * (g - m)
        v = v + 0.001 * (g * g - v)
        p = p - lr * (m / (eps + np.sqrt(v))) * math.sqrt(1 - 0.999**k) / (1 - 0.9**k)
        m_hat, v_hat = m / (1 - 0.9**k), v / (1 - 0.999**k)
        p_optax = p_optax - lr * m_hat / (np.sqrt(v_hat) + eps)
    ours = np.asarray(params["norm"]["weight"], np.float64)
    np.testing.assert_allclose(ours - p0, p - p0, rtol=1e-4, atol=1e-9)
    if steps == 10:  # the placement is visible: the other one is off by more than 1%
        assert np.max(np.abs((p_optax - p0) - (ours - p0))) > 1e-2 * np.max(np.abs(ours - p0))


def test_full_scale_step_on_llama_routes_each_group(nano_params):
    params = jax.tree.map(lambda s: jnp.ones(s.shape, s.dtype), nano_params)
    grads = jax.tree.map(lambda x: jnp.asarray(_rng(8).normal(size=x.shape), jnp.float32), params)
    tx = scale(0.01, 10, warmup_steps=1)
    state = tx.init(params)
    _, state = tx.update(grads, state, params)  # step 0: lr 0
    u, _ = tx.update(grads, state, params)  # step 1: peak
    flat = {path_name(p): x for p, x in jax.tree_util.tree_leaves_with_path(u)}
    q = np.asarray(flat["layers/0/self_attn/q_proj/kernel"])
    np.testing.assert_allclose(np.sqrt((q**2).mean(0)), 0.01, rtol=1e-5)
    head = np.asarray(flat["lm_head/kernel"])  # EMA of two equal gradients -> same direction
    np.testing.assert_allclose(np.sqrt((head**2).mean(0)), 0.01, rtol=1e-5)
    g_head = np.asarray(grads["lm_head"]["kernel"])
    np.testing.assert_allclose(head, _torch_update(g_head.T, 1, 0.01).T, rtol=1e-4, atol=1e-8)
