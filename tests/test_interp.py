"""shared.interp: the traced forward equals the plain one, interventions act where they say."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.interp import (
    AttentionOverride,
    Intervention,
    causal_noise_probs,
    causal_uniform_probs,
    head_patch,
    steering,
    trace,
)
from shared.models.llama import SIZES, Llama

NANO = dataclasses.replace(SIZES["nano"], vocab_size=61)  # 4 query heads on 2 kv heads
T = 70  # longer than the causal attention's 64-query block
ALL = ("resid_pre", "attn_out", "resid_mid", "ffn_out", "resid_post", "heads", "probs")


@pytest.fixture(scope="module")
def model():
    return Llama(NANO, rngs=nnx.Rngs(0))


@pytest.fixture(scope="module")
def tokens():
    return jax.random.randint(jax.random.key(1), (2, T), 0, NANO.vocab_size)


@nnx.jit
def _plain(model, tokens):
    return model(tokens)


@nnx.jit(static_argnames="capture")
def _trace(model, tokens, intervention=None, capture=()):
    return trace(model, tokens, intervention=intervention, capture=capture)


def test_no_intervention_is_bit_identical_and_captures_are_consistent(model, tokens):
    plain = _plain(model, tokens)
    logits, acts = _trace(model, tokens, capture=ALL)
    np.testing.assert_array_equal(np.asarray(logits), np.asarray(plain))
    np.testing.assert_array_equal(_trace(model, tokens)[0], plain)  # capture changes nothing
    L, D = NANO.num_layers, NANO.dim
    assert acts["resid_pre"].shape == (L, 2, T, D)
    assert acts["heads"].shape == (L, 2, T, NANO.num_heads, NANO.resolved_head_dim)
    assert acts["probs"].shape == (L, 2, NANO.num_heads, T, T)
    np.testing.assert_array_equal(acts["resid_mid"], acts["resid_pre"] + acts["attn_out"])
    np.testing.assert_array_equal(acts["resid_post"], acts["resid_mid"] + acts["ffn_out"])
    np.testing.assert_array_equal(acts["resid_post"][:-1], acts["resid_pre"][1:])
    np.testing.assert_array_equal(model.unembed(acts["resid_post"][-1]), plain)
    probs = np.asarray(acts["probs"], np.float64)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)
    assert np.all(probs[..., np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]] == 0)
    # the captured probabilities reproduce the heads' outputs (GQA: head n reads kv head n // 2)
    layer0 = model.layers[0]
    cos, sin, _, _ = model.positional(tokens)
    _, _, v = layer0.self_attn.project(layer0.input_layernorm(acts["resid_pre"][0]), cos, sin)
    heads = np.einsum("bnts,bsnh->btnh", probs[0], np.repeat(np.asarray(v, np.float64), 2, 2))
    np.testing.assert_allclose(heads, acts["heads"][0], atol=1e-5)


def test_padded_rows_are_bit_identical(model, tokens):
    valid = jnp.arange(T)[None, :] >= jnp.array([[0], [5]])
    positions = jnp.maximum(jnp.cumsum(valid, 1) - 1, 0)
    plain = nnx.jit(lambda m, t: m(t, positions=positions, key_valid=valid))(model, tokens)
    traced = nnx.jit(lambda m, t: trace(m, t, positions=positions, key_valid=valid)[0])(
        model, tokens
    )
    np.testing.assert_array_equal(traced, plain)


def test_own_probabilities_as_override_reproduce_the_logits(model, tokens):
    plain = _plain(model, tokens)
    _, acts = _trace(model, tokens, capture=("probs",))
    everywhere = jnp.ones((1, 1, T, T), bool)
    iv = Intervention(
        attention={i: AttentionOverride(acts["probs"][i], everywhere) for i in range(2)}
    )
    np.testing.assert_allclose(_trace(model, tokens, iv)[0], plain, atol=2e-5, rtol=1e-5)


def test_override_changes_nothing_below_its_layer_and_keeps_rows_stochastic(model, tokens):
    noise = causal_noise_probs(jax.random.key(2), (2, NANO.num_heads, T, T))
    iv = Intervention(attention={1: AttentionOverride(noise, jnp.ones((1, 1, T, T), bool))})
    _, base = _trace(model, tokens, capture=ALL)
    _, acts = _trace(model, tokens, iv, ALL)
    for name in ("resid_pre", "attn_out", "heads", "probs", "resid_post"):
        np.testing.assert_array_equal(acts[name][0], base[name][0])
    np.testing.assert_array_equal(acts["resid_pre"][1], base["resid_pre"][1])
    np.testing.assert_array_equal(acts["probs"][1], noise)
    assert not np.allclose(acts["attn_out"][1], base["attn_out"][1])


def test_keep_mass_override_touches_only_its_entries(model, tokens):
    image = jnp.arange(T) < 20  # keys 0..19 play the image tokens, queries >= 20 the text
    where = (jnp.arange(T)[:, None] >= 20) & image[None, :]
    noise = causal_noise_probs(jax.random.key(3), (1, 1, T, T))
    iv = Intervention(attention={0: AttentionOverride(noise, where[None, None], keep_mass=True)})
    _, base = _trace(model, tokens, capture=("probs",))
    _, acts = _trace(model, tokens, iv, ("probs",))
    p, b = np.asarray(acts["probs"][0], np.float64), np.asarray(base["probs"][0], np.float64)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    # untouched entries (to the last ulp: the two programs fuse the softmax differently)
    np.testing.assert_allclose(p[:, :, :20], b[:, :, :20], rtol=3e-7, atol=0)  # image queries
    np.testing.assert_allclose(p[:, :, 20:, 20:], b[:, :, 20:, 20:], rtol=3e-7, atol=0)
    np.testing.assert_allclose(p[:, :, 20:, :20].sum(-1), b[:, :, 20:, :20].sum(-1), atol=1e-6)
    assert not np.allclose(p[:, :, 20:, :20], b[:, :, 20:, :20])


def test_steering_adds_exactly_at_its_layer_and_positions(model, tokens):
    vec = jax.random.normal(jax.random.key(4), (NANO.dim,))
    at = (jnp.arange(T) == T - 1)[None]
    _, base = _trace(model, tokens, capture=("resid_pre",))
    zero = Intervention(steer=steering(NANO.num_layers, 1, vec, 0.0, at))
    np.testing.assert_array_equal(_trace(model, tokens, zero)[0], _plain(model, tokens))
    iv = Intervention(steer=steering(NANO.num_layers, 1, vec, 2.0, at))
    _, acts = _trace(model, tokens, iv, ("resid_pre",))
    np.testing.assert_array_equal(acts["resid_pre"][0], base["resid_pre"][0])
    diff = np.asarray(acts["resid_pre"][1] - base["resid_pre"][1])
    np.testing.assert_allclose(
        diff[:, -1], np.broadcast_to(2.0 * np.asarray(vec), (2, 64)), atol=1e-5
    )
    assert np.all(diff[:, :-1] == 0)


def test_zeroed_and_patched_heads(model, tokens):
    _, base = _trace(model, tokens, capture=("heads", "resid_pre"))
    at = jnp.ones((1, T), bool)
    zeros = jnp.zeros((1, 1, NANO.resolved_head_dim))
    mask, values = head_patch(NANO.num_layers, NANO.num_heads, 1, 2, zeros, at)
    _, acts = _trace(
        model, tokens, Intervention(head_mask=mask, head_values=values), ("heads", "resid_pre")
    )
    np.testing.assert_array_equal(acts["resid_pre"][:2], base["resid_pre"][:2])
    assert np.all(np.asarray(acts["heads"][1, :, :, 2]) == 0)
    others = [0, 1, 3]
    np.testing.assert_array_equal(acts["heads"][1, :, :, others], base["heads"][1, :, :, others])


def test_patching_every_head_at_the_last_token_restores_the_clean_output(model, tokens):
    clean = tokens
    corrupted = tokens.at[:, : T - 1].set((tokens[:, : T - 1] + 7) % NANO.vocab_size)
    clean_logits, acts = _trace(model, clean, capture=("heads",))
    last = (jnp.arange(T) == T - 1)[None, :, None]  # [1, T, 1]
    mask = jnp.broadcast_to(last[None], (NANO.num_layers, 1, T, NANO.num_heads))
    iv = Intervention(head_mask=mask, head_values=acts["heads"])
    patched = _trace(model, corrupted, iv)[0]
    np.testing.assert_allclose(patched[:, -1], clean_logits[:, -1], atol=1e-5)
    assert not np.allclose(_plain(model, corrupted)[:, -1], clean_logits[:, -1], atol=1e-3)


def test_head_sweeps_vmap_over_one_compiled_function(model, tokens):
    at = (jnp.arange(T) == T - 1)[None]
    zeros = jnp.zeros((1, 1, NANO.resolved_head_dim))

    def last_logits(m, layer, head):
        mask, values = head_patch(NANO.num_layers, NANO.num_heads, layer, head, zeros, at)
        iv = Intervention(head_mask=mask, head_values=values)
        return trace(m, tokens, intervention=iv)[0][:, -1]

    layers, heads = jnp.array([0, 1, 1]), jnp.array([0, 3, 2])
    swept = nnx.jit(lambda m: jax.vmap(lambda la, h: last_logits(m, la, h))(layers, heads))(model)
    for j in range(3):
        one = nnx.jit(last_logits, static_argnums=(1, 2))(model, int(layers[j]), int(heads[j]))
        np.testing.assert_allclose(swept[j], one, atol=1e-5)


def test_predefined_attention_matrices():
    u = np.asarray(causal_uniform_probs(5)[0, 0], np.float64)
    ref = np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None]
    np.testing.assert_array_equal(u, ref.astype(np.float32))
    v = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(u @ v, np.cumsum(v, 0) / np.arange(1, 6)[:, None], atol=1e-6)
    n = np.asarray(causal_noise_probs(jax.random.key(0), (2, 3, 6, 6)), np.float64)
    np.testing.assert_allclose(n.sum(-1), 1.0, atol=1e-6)
    assert np.all(n[..., np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)
    assert np.all(n[..., np.tril_indices(6)[0], np.tril_indices(6)[1]] > 0)
    none = causal_noise_probs(jax.random.key(0), (1, 4), where=jnp.zeros((1, 4), bool))
    assert np.all(np.asarray(none) == 0)  # a row with no visible key stays empty


def test_bad_requests_name_the_fix(model, tokens):
    with pytest.raises(ValueError, match="capture names"):
        trace(model, tokens, capture=("attn",))
    with pytest.raises(ValueError, match="together"):
        Intervention(head_mask=jnp.zeros((2, 1, 1, 4), bool))
    bad = AttentionOverride(causal_uniform_probs(T), jnp.ones((1, 1, T, T), bool))
    with pytest.raises(ValueError, match="outside"):
        trace(model, tokens, intervention=Intervention(attention={5: bad}))
    fp4 = Llama(dataclasses.replace(NANO, attention="fp4_ptq"), rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="dot-product"):
        trace(fp4, tokens, capture=("probs",))
