"""Pallas FP4 attention (interpret mode on CPU) against the dense reference, every mode."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas.fp4_attention import MODES, BlockSizes, fp4_attention
from shared.models.attention import dot_product_attention


def _inputs(b, t, s, n, h, dtype=jnp.float32, seed=0):
    k1, k2, k3, k4 = jax.random.split(jax.random.key(seed), 4)
    q = jax.random.normal(k1, (b, t, n, h)) * 2.0
    k = jax.random.normal(k2, (b, s, n, h)) * 2.0
    v = jax.random.normal(k3, (b, s, n, h))
    do = jax.random.normal(k4, (b, t, n, h))
    return tuple(x.astype(dtype) for x in (q, k, v, do))


def _both(mode, causal, bs, q, k, v, do):
    """(out, dq, dk, dv) for the kernel and the reference, each in one jit."""

    def run(impl):
        def f(q, k, v):
            return fp4_attention(
                q, k, v, mode=mode, causal=causal, impl=impl, block_sizes=bs, interpret=True
            )

        @jax.jit
        def g(q, k, v, do):
            out, vjp = jax.vjp(f, q, k, v)
            return (out, *vjp(do))

        return [np.asarray(x, np.float32) for x in g(q, k, v, do)]

    return run("pallas"), run("reference")


def _assert_close(got, want, atol):
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        np.testing.assert_allclose(a, b, atol=atol, rtol=0, err_msg=name)


@pytest.mark.parametrize("mode", MODES)
def test_kernel_equals_reference_every_mode_ragged_causal(mode):
    # T = S = 45: neither a multiple of the 32-token tiles nor of the 16-groups.
    got, want = _both(mode, True, BlockSizes(), *_inputs(1, 45, 45, 2, 32))
    _assert_close(got, want, atol=2e-5)


@jax.jit
def _naive(q, k, v, do):
    out, vjp = jax.vjp(lambda q, k, v: dot_product_attention(q, k, v), q, k, v)
    return (out, *vjp(do))


@pytest.mark.parametrize("mode", ["bf16", "attn_qat"])
def test_kernel_cross_attention_one_head_ragged_mixed_tiles(mode):
    # T=20, S=50 (neither a tile multiple), one head, different tiles in each kernel.
    bs = BlockSizes(block_q=16, block_k=32, block_q_dkv=32, block_kv_dkv=16, block_q_dq=16,
                    block_kv_dq=48)  # fmt: skip
    inputs = _inputs(2, 20, 50, 1, 16, seed=1)
    got, want = _both(mode, False, bs, *inputs)
    _assert_close(got, want, atol=2e-5)
    if mode == "bf16":
        # Independent of the reference's padding: padded keys must get zero probability and
        # padded queries no gradient, or the kernel would differ from plain attention.
        _assert_close(got, [np.asarray(x) for x in _naive(*inputs)], atol=1e-5)


@pytest.mark.parametrize("mode", ["attn_qat", "drop_in_qat"])
def test_kernel_grouped_query_heads_after_a_cached_prefix(mode):
    # 4 query heads on 2 key/value heads (not repeated), causal, T = 20 queries after 25 cached
    # positions (S = 45), tiles that split the prefix unevenly.
    q, _, _, do = _inputs(1, 20, 45, 4, 32, seed=3)
    _, k, v, _ = _inputs(1, 20, 45, 2, 32, seed=4)
    bs = BlockSizes(block_q=16, block_k=16, block_q_dkv=16, block_kv_dkv=32, block_q_dq=32,
                    block_kv_dq=16)  # fmt: skip
    got, want = _both(mode, True, bs, q, k, v, do)
    assert got[2].shape == k.shape
    _assert_close(got, want, atol=2e-5)


def test_kernel_bfloat16_matches_reference_on_the_same_inputs():
    q, k, v, do = _inputs(1, 40, 40, 2, 32, dtype=jnp.bfloat16, seed=2)
    got, want = _both("attn_qat", True, BlockSizes(), q, k, v, do)
    # The kernel feeds bf16 operands to the dots (P~, dS and the outputs rounded to bf16; the
    # fake-quantized Q/K/V and fq(P) are exact in bf16); the reference stays in float32.
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        scale = np.abs(b).max()
        assert np.abs(a - b).max() <= 2e-2 * scale, name


@pytest.mark.parametrize("mode", ["attn_qat", "bf16"])
def test_kernels_lower_to_triton_for_cuda(mode, monkeypatch):
    # Lowering (not compiling) for CUDA from a CPU host runs every Pallas->Triton rule on the
    # kernel bodies: a CPU-only construct in them would fail here.
    from jax import export

    from kernels_pallas.fp4_attention import kernel

    monkeypatch.setattr(kernel, "target_is_gpu", lambda: True)
    x = jax.ShapeDtypeStruct((1, 96, 1, 64), jnp.bfloat16)  # a shape no other test traces

    def loss(q, k, v):
        out = fp4_attention(q, k, v, mode=mode, impl="pallas", interpret=False)
        return jnp.sum(out.astype(jnp.float32))

    checks = [export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")]
    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
    text = export.export(grad, platforms=["cuda"], disabled_checks=checks)(x, x, x).mlir_module()
    names = ("fp4_attention_forward", "fp4_attention_dkdv", "fp4_attention_dq")
    assert text.count("__gpu$xla.gpu.triton") >= 3 and all(n in text for n in names)
