"""FP4 attention reference: closed forms, the O' identity, tile-order semantics and mode wiring."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas.fp4.reference import nvfp4_last_axis
from kernels_pallas.fp4_attention import MODES, BlockSizes, fp4_attention
from kernels_pallas.fp4_attention import reference as ref
from shared.models.attention import dot_product_attention

BS = BlockSizes()


def _inputs(b=1, t=40, s=None, n=2, h=32, seed=0, scale=1.0):
    s = t if s is None else s
    k1, k2, k3, k4 = jax.random.split(jax.random.key(seed), 4)
    q = jax.random.normal(k1, (b, t, n, h)) * scale
    k = jax.random.normal(k2, (b, s, n, h)) * scale
    v = jax.random.normal(k3, (b, s, n, h))
    do = jax.random.normal(k4, (b, t, n, h))
    return q, k, v, do


def _naive(q, k, v, causal):
    mask = jnp.tril(jnp.ones((q.shape[1], k.shape[1]), bool)) if causal else None
    return dot_product_attention(q, k, v, mask)


def _out_and_grads(f, q, k, v, do):
    """f(q, k, v) and its VJP at do, in one jit (eager dispatch is slow on a busy CPU)."""

    @jax.jit
    def run(q, k, v, do):
        out, vjp = jax.vjp(f, q, k, v)
        return out, vjp(do)

    return run(q, k, v, do)


_fq = jax.jit(nvfp4_last_axis)


@pytest.mark.parametrize("causal,t,s", [(True, 40, 40), (False, 37, 53)])
def test_no_quantization_equals_softmax_attention_and_its_grad(causal, t, s):
    q, k, v, do = _inputs(t=t, s=s)
    f = jax.jit(
        lambda q, k, v: fp4_attention(q, k, v, mode="bf16", causal=causal, impl="reference")
    )
    out, vjp = jax.vjp(f, q, k, v)
    want, vjp_want = jax.vjp(lambda q, k, v: _naive(q, k, v, causal), q, k, v)
    np.testing.assert_allclose(out, want, atol=1e-5, rtol=0)
    for got, exp in zip(vjp(do), vjp_want(do)):
        np.testing.assert_allclose(got, exp, atol=1e-5, rtol=0)


def _tiled_forward_loop(q, k, v, causal, bk):
    """Algorithm 2 as written: online softmax over key tiles (one (batch, head), loops in numpy)."""
    qf, kf, vf = (np.asarray(_fq(x), np.float64) for x in (q, k, v))
    t, h = qf.shape
    s_len = kf.shape[0]
    m, denom = np.full(t, -np.inf), np.zeros(t)
    o, o_prime = np.zeros((t, h)), np.zeros((t, h))
    for start in range(0, s_len, bk):
        s = qf @ kf[start : start + bk].T / math.sqrt(h)
        kpos = np.arange(start, start + s.shape[1])
        mask = np.ones_like(s, bool) if not causal else kpos[None, :] <= np.arange(t)[:, None]
        s = np.where(mask, s, -np.inf)
        m_new = np.maximum(m, s.max(-1))
        alpha = np.exp(m - m_new)
        p = np.where(mask, np.exp(s - m_new[:, None]), 0.0)
        pad = -p.shape[1] % 16
        pq = np.asarray(_fq(jnp.asarray(np.pad(p, ((0, 0), (0, pad))), jnp.float32)))
        denom = alpha * denom + p.sum(-1)
        o = alpha[:, None] * o + pq[:, : p.shape[1]] @ vf[start : start + bk]
        o_prime = alpha[:, None] * o_prime + p @ vf[start : start + bk]
        m = m_new
    return o / denom[:, None], o_prime / denom[:, None], m + np.log(denom)


@pytest.mark.parametrize("causal,bk", [(True, 16), (False, 32)])
def test_dense_reference_equals_the_tiled_online_loop(causal, bk):
    q, k, v, _ = _inputs(t=45, n=1, seed=1, scale=2.0)
    bs = BlockSizes(block_k=bk)
    fwd = ref.forward(q, k, v, mode="attn_qat", causal=causal, block_sizes=bs)
    o, o_prime, lse = _tiled_forward_loop(q[0, :, 0], k[0, :, 0], v[0, :, 0], causal, bk)
    np.testing.assert_allclose(fwd.o[0, :, 0], o, atol=2e-5, rtol=0)
    np.testing.assert_allclose(fwd.o_prime[0, :, 0], o_prime, atol=2e-5, rtol=0)
    np.testing.assert_allclose(fwd.lse[0, 0], lse, atol=2e-5, rtol=0)


def test_key_tile_size_changes_the_quantized_forward_only():
    q, k, v, _ = _inputs(t=64, seed=2, scale=2.0)

    def out(mode, **tiles):
        return np.asarray(
            ref.forward(q, k, v, mode=mode, causal=True, block_sizes=BlockSizes(**tiles)).o
        )

    # P~ is quantized against the running max of each key tile: block_k changes O ...
    assert np.abs(out("attn_qat", block_k=16) - out("attn_qat", block_k=64)).max() > 1e-3
    # ... block_q does not (P~ is quantized per row), and without quantization nothing does.
    np.testing.assert_array_equal(out("attn_qat", block_q=16), out("attn_qat", block_q=64))
    np.testing.assert_allclose(out("bf16", block_k=16), out("bf16", block_k=64), atol=1e-6)


def test_single_key_tile_forward_and_backward_quantize_different_tensors():
    q, k, v, do = _inputs(t=32, n=1, seed=3, scale=2.0)
    bs = BlockSizes(block_k=32)  # one key tile: the running max is the row max
    fwd = ref.forward(q, k, v, mode="attn_qat", causal=False, block_sizes=bs)
    s = jnp.einsum("BTNH,BSNH->BNTS", fwd.qf, fwd.kf, precision="highest") / math.sqrt(32)
    p_tilde = jnp.exp(s - s.max(-1, keepdims=True))
    denom = p_tilde.sum(-1, keepdims=True)
    o = jnp.einsum("BNTS,BSNH->BTNH", _fq(p_tilde) / denom, fwd.vf, precision="highest")
    np.testing.assert_allclose(fwd.o, o, atol=1e-5, rtol=0)
    bwd = ref.backward(fwd, do, mode="attn_qat", causal=False, block_sizes=bs)
    np.testing.assert_allclose(bwd.p, p_tilde / denom, atol=1e-6, rtol=0)  # P = exp(S - L)
    # fq(P~)/l and fq(P~/l) are different tensors (the E4M3 scale does not commute with 1/l).
    diff = np.abs(_fq(bwd.p) - _fq(p_tilde) / denom)
    assert diff.max() > 1e-3


def test_o_prime_restores_the_flash_attention_identity():
    q, k, v, do = _inputs(t=48, seed=4, scale=2.0)
    fwd = ref.forward(q, k, v, mode="attn_qat", causal=True, block_sizes=BS)
    bwd = ref.backward(fwd, do, mode="attn_qat", causal=True, block_sizes=BS)
    exact = jnp.sum(bwd.p * bwd.dp, axis=-1)  # rowsum(P * dP), [B, N, T]
    with_o_prime = jnp.einsum("BTNH,BTNH->BNT", do, fwd.o_prime)
    with_o = jnp.einsum("BTNH,BTNH->BNT", do, fwd.o)
    np.testing.assert_allclose(with_o_prime, exact, atol=1e-5, rtol=0)
    np.testing.assert_allclose(bwd.d, with_o_prime, atol=1e-6, rtol=1e-6)  # attn_qat uses it
    assert np.abs(with_o - exact).max() > 1e-2  # the quantized O breaks it


def test_each_ablation_carries_exactly_one_fix():
    q, k, v, do = _inputs(t=40, seed=5, scale=2.0)
    grads = {}
    for mode in MODES[1:]:
        fwd = ref.forward(q, k, v, mode=mode, causal=True, block_sizes=BS)
        grads[mode] = ref.backward(fwd, do, mode=mode, causal=True, block_sizes=BS)

    def same(a, b):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    for name in ("dq", "dk", "dv"):
        same(getattr(grads["fp4_ptq"], name), getattr(grads["drop_in_qat"], name))
    # On quantized Q/K/V: D from O' changes dQ/dK (through dS) only; fq(P) in dV changes dV only.
    same(grads["only_o_prime"].dq, grads["attn_qat"].dq)
    same(grads["only_quantized_p"].dv, grads["attn_qat"].dv)
    assert np.abs(grads["only_quantized_p"].dq - grads["attn_qat"].dq).max() > 1e-4
    assert np.abs(grads["only_o_prime"].dv - grads["attn_qat"].dv).max() > 1e-4
    assert np.abs(grads["attn_qat"].dq - grads["drop_in_qat"].dq).max() > 1e-4
    assert np.abs(grads["attn_qat"].dv - grads["drop_in_qat"].dv).max() > 1e-4


def _flash_backward_float64(q, k, v, o, lse, do, causal):
    """FlashAttention's backward (one batch, one head) in float64, from saved O and L."""
    q, k, v, o, do = (np.asarray(x, np.float64) for x in (q, k, v, o, do))
    t, s_len, h = q.shape[0], k.shape[0], q.shape[1]
    mask = np.arange(s_len)[None, :] <= np.arange(t)[:, None] + (s_len - t) if causal else True
    p = np.where(mask, np.exp(q @ k.T / math.sqrt(h) - np.asarray(lse, np.float64)[:, None]), 0.0)
    d = (do * o).sum(-1, keepdims=True)
    ds = p * (do @ v.T - d) / math.sqrt(h)
    return ds @ k, ds.T @ q, p.T @ do


@pytest.mark.parametrize("mode", ["drop_in_qat", "fp4_ptq"])
def test_drop_in_backward_is_flash_attention_on_the_high_precision_inputs(mode):
    # The paper's drop-in QAT: FP4 forward, then the unchanged high-precision backward, i.e. the
    # original Q, K, V with the forward's O and L (not Q^F, K^F, V^F).
    q, k, v, do = _inputs(t=40, n=1, seed=7, scale=2.0)
    fwd = ref.forward(q, k, v, mode=mode, causal=True, block_sizes=BS)
    np.testing.assert_array_equal(np.asarray(fwd.qf), np.asarray(q))
    got = _out_and_grads(lambda *a: fp4_attention(*a, mode=mode, impl="reference"), q, k, v, do)[1]
    want = _flash_backward_float64(
        q[0, :, 0], k[0, :, 0], v[0, :, 0], fwd.o[0, :, 0], fwd.lse[0, 0], do[0, :, 0], True
    )
    for name, a, b in zip(("dq", "dk", "dv"), got, want):
        np.testing.assert_allclose(a[0, :, 0], b, atol=2e-5, rtol=0, err_msg=name)
    # Attn-QAT's backward runs on the quantized inputs instead.
    qat = ref.forward(q, k, v, mode="attn_qat", causal=True, block_sizes=BS)
    np.testing.assert_array_equal(np.asarray(qat.qf), np.asarray(_fq(q)))


def test_grouped_query_heads_equal_repeated_heads():
    # 6 query heads on 2 key/value heads: query head n reads kv head n // 3, and a kv head's
    # gradient is the sum over its query heads.
    q, _, _, do = _inputs(t=40, n=6, seed=8, scale=2.0)
    _, k, v, _ = _inputs(t=40, n=2, seed=9, scale=2.0)
    for mode in ("attn_qat", "drop_in_qat"):

        def f(q, k, v, m=mode):
            return fp4_attention(q, k, v, mode=m, impl="reference")

        def f_rep(q, k, v, m=mode):
            return f(q, ref.repeat_kv(k, 6), ref.repeat_kv(v, 6), m)

        out, (dq, dk, dv) = _out_and_grads(f, q, k, v, do)
        want, (dq_w, dk_w, dv_w) = _out_and_grads(f_rep, q, k, v, do)
        np.testing.assert_allclose(out, want, atol=1e-6, rtol=0)
        for name, a, b in (("dq", dq, dq_w), ("dk", dk, dk_w), ("dv", dv, dv_w)):
            np.testing.assert_allclose(a, b, atol=2e-5, rtol=0, err_msg=f"{mode} {name}")
        assert dk.shape == k.shape


def test_causal_queries_after_a_prefix_equal_the_last_rows_of_full_attention():
    # T = 24 queries at the end of S = 56 positions (bottom-right causal mask).
    q, k, v, do = _inputs(t=56, seed=10)
    f = jax.jit(lambda q, k, v: fp4_attention(q, k, v, mode="bf16", impl="reference"))
    out, vjp = jax.vjp(f, q[:, -24:], k, v)
    full, vjp_full = jax.vjp(lambda q, k, v: _naive(q, k, v, True), q, k, v)
    np.testing.assert_allclose(out, full[:, -24:], atol=1e-5, rtol=0)
    do_last = do.at[:, :-24].set(0.0)
    got, want = vjp(do_last[:, -24:]), vjp_full(do_last)
    np.testing.assert_allclose(got[0], want[0][:, -24:], atol=1e-5, rtol=0)
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    # With quantization the prefix case is the last rows of the full quantized forward too
    # (P~ is quantized per row, and the rows see the same key tiles).
    qat = fp4_attention(q, k, v, mode="attn_qat", impl="reference")[:, -24:]
    np.testing.assert_allclose(
        fp4_attention(q[:, -24:], k, v, mode="attn_qat", impl="reference"), qat, atol=1e-6
    )


def _cosine(a, b):
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_gradient_cosine_against_fp32_attention_at_head_dim_128():
    q, k, v, do = _inputs(b=1, t=128, n=2, h=128, seed=6)
    want = _out_and_grads(lambda q, k, v: _naive(q, k, v, True), q, k, v, do)[1]
    cos = {}
    for mode in ("attn_qat", "drop_in_qat"):
        got = _out_and_grads(
            lambda q, k, v, m=mode: fp4_attention(q, k, v, mode=m, impl="reference"), q, k, v, do
        )[1]
        cos[mode] = [_cosine(g, w) for g, w in zip(got, want)]
    print("gradient cosine vs fp32 attention (dq, dk, dv):", cos)
    assert min(cos["attn_qat"]) >= 0.98  # the level reported with the official kernels


def test_bfloat16_inputs_and_bad_configs():
    q, k, v, _ = _inputs(t=33)
    q16, k16, v16 = (x.astype(jnp.bfloat16) for x in (q, k, v))
    o16 = fp4_attention(q16, k16, v16, mode="attn_qat", impl="reference")
    assert o16.dtype == jnp.bfloat16
    # The reference computes in float32 whatever the input dtype and rounds only the output.
    o32 = fp4_attention(*(x.astype(jnp.float32) for x in (q16, k16, v16)), mode="attn_qat")
    np.testing.assert_array_equal(np.asarray(o16), np.asarray(o32.astype(jnp.bfloat16)))
    with pytest.raises(ValueError, match="mode="):
        fp4_attention(q, k, v, mode="fp8")
    with pytest.raises(ValueError, match="quant_group"):
        fp4_attention(q[..., :24], k[..., :24], v[..., :24], mode="attn_qat")
    with pytest.raises(ValueError, match="block_k"):
        fp4_attention(q, k, v, mode="attn_qat", block_sizes=BlockSizes(block_k=24))
    with pytest.raises(ValueError, match="T <= S"):
        fp4_attention(q, k[:, :20], v[:, :20], mode="bf16", causal=True)
    with pytest.raises(ValueError, match="K dividing N"):
        kv2 = jnp.tile(k, (1, 1, 2, 1))
        fp4_attention(jnp.tile(q, (1, 1, 3, 1)), kv2, kv2, mode="bf16")
