"""The attention mode of the shared decoder: quantization off reproduces dot-product attention,
and each FP4 mode reaches the kernel (forward) and its own backward."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from projects.attn_qat.model import with_attention
from shared.models.llama import Llama, LlamaConfig, next_token_loss

# head_dim 16 (one NVFP4 group); T = 40 is not a multiple of the 32-token tiles.
CFG = LlamaConfig(vocab_size=61, dim=32, num_layers=1, num_heads=2, num_kv_heads=1, ffn_dim=48,
                  max_seq_len=64)  # fmt: skip
TOKENS = jax.random.randint(jax.random.key(1), (2, 40), 0, CFG.vocab_size)
FP4 = ("fp4_ptq", "drop_in_qat", "attn_qat", "only_o_prime", "only_quantized_p")


@pytest.fixture(scope="module")
def base():
    return Llama(CFG, rngs=nnx.Rngs(0))


@nnx.jit
def _logits(model, tokens):
    return model(tokens)


@nnx.jit
def _grads(model, tokens):
    loss = lambda m: next_token_loss(m(tokens[:, :-1]), tokens[:, 1:])
    return nnx.grad(loss)(model)


def _flat(grads):
    return np.concatenate([np.ravel(g) for g in jax.tree.leaves(grads)])


def test_quantization_off_equals_dot_product_forward_and_gradients(base):
    bf16 = with_attention(base, "bf16")
    np.testing.assert_allclose(_logits(bf16, TOKENS), _logits(base, TOKENS), atol=1e-5, rtol=0)
    g_ref, g = _flat(_grads(base, TOKENS)), _flat(_grads(bf16, TOKENS))
    np.testing.assert_allclose(g, g_ref, atol=1e-5 * np.abs(g_ref).max(), rtol=0)


def test_fp4_modes_share_the_quantized_forward_and_change_the_logits(base):
    ref = np.asarray(_logits(base, TOKENS))
    logits = {m: np.asarray(_logits(with_attention(base, m), TOKENS)) for m in FP4}
    for m in FP4:  # the modes differ only in their backward pass
        np.testing.assert_array_equal(logits[m], logits["fp4_ptq"], err_msg=m)
    assert np.abs(logits["fp4_ptq"] - ref).max() > 1e-3  # the mode reaches the kernel


def test_each_backward_mode_gives_its_own_gradient(base):
    grads = {m: _flat(_grads(with_attention(base, m), TOKENS)) for m in FP4[1:]}
    names = list(grads)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            gap = np.abs(grads[a] - grads[b]).max() / np.abs(grads[a]).max()
            assert gap > 1e-4, (a, b, gap)


def test_kv_cache_decoding_stays_dot_product(base):
    from shared.models.llama import KVCache

    fp4 = with_attention(base, "attn_qat")
    step = nnx.jit(lambda m, t, c: m(t, cache=c))
    cache = KVCache.empty(CFG, 2, 48)
    out_ref, _ = step(base, TOKENS[:, :8], cache)
    out_fp4, _ = step(fp4, TOKENS[:, :8], cache)
    np.testing.assert_array_equal(out_fp4, out_ref)


def test_with_attention_shares_the_parameters(base):
    fp4 = with_attention(base, "attn_qat")
    assert fp4.cfg.attention == "attn_qat" and base.cfg.attention == "dot_product"
    assert fp4.embed_tokens.embedding[...] is base.embed_tokens.embedding[...]


def test_bad_attention_names_fail_clearly():
    with pytest.raises(ValueError, match="attention='fp8'"):
        dataclasses.replace(CFG, attention="fp8")
    with pytest.raises(ValueError, match="attention_fn"):
        Llama(dataclasses.replace(CFG, attention="attn_qat"), rngs=nnx.Rngs(0),
              attention_fn=lambda q, k, v, mask: q)  # fmt: skip
