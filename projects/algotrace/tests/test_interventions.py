"""Spec section 6 invariants of injection, patching and FV assembly, on a tiny random decoder."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from projects.algotrace import fv, tasks
from shared.interp import Intervention, head_patch, steering
from shared.models.llama import SIZES, Llama

L, N = 2, 4


@pytest.fixture(scope="module")
def model():
    cfg = dataclasses.replace(SIZES["nano"], vocab_size=len(tasks.VOCAB), num_kv_heads=N)
    return Llama(cfg, rngs=nnx.Rngs(0))


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(0)
    rows = [list(rng.integers(3, len(tasks.VOCAB), size=n)) for n in (9, 12, 7)]
    return fv.pad_batch(rows)


def test_alpha_zero_injection_is_bit_identical(model, batch):
    tok, pads = batch
    vec = np.random.default_rng(1).normal(size=model.cfg.dim).astype(np.float32)
    at = jnp.ones(tok.shape, bool)
    plain, _ = fv.run_traced(model, tok, pads)
    for layer in range(L):
        steer = steering(L, layer, jnp.asarray(vec), 0.0, at)
        logits, _ = fv.run_traced(model, tok, pads, Intervention(steer=steer))
        assert np.array_equal(np.asarray(logits), np.asarray(plain))
    g0 = fv.generate(model, tok, pads, 6)
    g1 = fv.generate(model, tok, pads, 6, vector=vec, layer=1, alpha=0.0, where="all")
    assert np.array_equal(g0, g1)
    # and a nonzero alpha does change the output (the hook is live)
    steer = steering(L, 0, jnp.asarray(vec), 3.0, at)
    logits, _ = fv.run_traced(model, tok, pads, Intervention(steer=steer))
    assert not np.allclose(np.asarray(logits), np.asarray(plain), atol=1e-3)


def test_injection_at_layer_changes_nothing_below(model, batch):
    tok, pads = batch
    vec = jnp.ones((model.cfg.dim,))
    _, clean = fv.run_traced(model, tok, pads)
    steer = steering(L, 1, vec, 2.0, jnp.ones(tok.shape, bool))
    _, cap = fv.run_traced(model, tok, pads, Intervention(steer=steer))
    assert np.array_equal(np.asarray(cap["resid_pre"][0]), np.asarray(clean["resid_pre"][0]))
    assert np.array_equal(np.asarray(cap["heads"][0]), np.asarray(clean["heads"][0]))
    diff = np.asarray(cap["resid_pre"][1] - clean["resid_pre"][1])
    np.testing.assert_allclose(diff, 2.0, atol=1e-5)


def test_fv_assembly_equals_slice_matmul(model):
    hd = model.cfg.resolved_head_dim
    mean = np.random.default_rng(2).normal(size=(L, N, hd)).astype(np.float32)
    heads = [(0, 1), (1, 3), (1, 0)]
    got = fv.function_vector(model, mean, heads)
    want = sum(
        mean[layer, h]
        @ np.asarray(model.layers[layer].self_attn.o_proj.kernel[...])[h * hd : (h + 1) * hd]
        for layer, h in heads
    )
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_cached_cie_equals_traced_head_patch(model, batch):
    tok, pads = batch
    mean = np.random.default_rng(3).normal(size=(L, N, model.cfg.resolved_head_dim))
    mean = mean.astype(np.float32)
    targets = np.array([5, 6, 7])
    cie = fv.causal_indirect_effects(model, tok, pads, targets, mean)
    base, _ = fv.run_traced(model, tok, pads)
    p0 = np.asarray(jax.nn.softmax(base[:, -1]))[np.arange(3), targets]
    at = jnp.zeros(tok.shape, bool).at[:, -1].set(True)
    for layer, h in [(0, 0), (1, 2)]:
        mask, vals = head_patch(L, N, layer, h, jnp.asarray(mean[layer, h])[None, None], at)
        logits, _ = fv.run_traced(model, tok, pads, Intervention(head_mask=mask, head_values=vals))
        p = np.asarray(jax.nn.softmax(logits[:, -1]))[np.arange(3), targets]
        np.testing.assert_allclose(cie[layer, h], p - p0, atol=1e-6)


def test_patching_every_head_with_clean_values_restores_clean_output(model):
    rng = np.random.default_rng(4)
    demos = [tasks.icl_pair("reverse2", rng) for _ in range(6)]
    query = tasks.icl_pair("reverse2", rng)[0]
    clean = tasks.encode(tasks.icl_prompt(demos, query))
    corrupt = tasks.encode(tasks.icl_prompt(tasks.shuffle_labels(demos, rng), query))
    tok, pads = fv.pad_batch([clean, corrupt])
    clean_logits, cap = fv.run_traced(model, tok, pads)
    values = cap["heads"][:, 0, -1]  # [L, N, H] the clean run's last-token head outputs
    graphdef, state = nnx.split(model)
    cache, valid = fv.prefix_cache(model, jnp.asarray(tok[1:]), jnp.asarray(pads[1:]))
    mask = jnp.ones((L, N), bool)
    patched = fv.last_token_logits(model, cache, jnp.asarray(tok[1:, -1]), jnp.asarray(pads[1:]),
                                   valid, mask, values)  # fmt: skip
    unpatched = fv.last_token_logits(model, cache, jnp.asarray(tok[1:, -1]),
                                     jnp.asarray(pads[1:]), valid, ~mask, values)  # fmt: skip
    np.testing.assert_allclose(patched[0], clean_logits[0, -1], atol=1e-4)
    assert not np.allclose(unpatched[0], clean_logits[0, -1], atol=1e-3)
    np.testing.assert_allclose(unpatched[0], clean_logits[1, -1], atol=1e-4)


def test_cie_of_a_zeroed_head_is_zero(model, batch):
    tok, pads = batch
    hd = model.cfg.resolved_head_dim
    zeroed = nnx.clone(model)
    kernel = zeroed.layers[1].self_attn.o_proj.kernel
    kernel[...] = kernel[...].at[2 * hd : 3 * hd].set(0.0)
    mean = np.random.default_rng(5).normal(size=(L, N, hd)).astype(np.float32) * 5
    cie = fv.causal_indirect_effects(zeroed, tok, pads, np.array([5, 6, 7]), mean)
    assert np.all(cie[1, 2] == 0.0)
    assert np.abs(cie).max() > 0  # the other heads do have effects


def test_top_heads_order():
    aie = np.array([[0.1, 0.5], [0.3, -0.2]])
    assert fv.top_heads(aie, 3) == [(0, 1), (1, 0), (0, 0)]
