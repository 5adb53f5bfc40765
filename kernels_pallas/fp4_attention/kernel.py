"""Pallas FP4 flash attention: forward (O, logsumexp L, O') and backward (dK/dV, dQ) kernels.

O' (the high-precision P~ V^F / l) is emitted only by the modes whose backward uses it
(attn_qat, only_o_prime); the others skip its extra matmul.

Layout inside the kernels is [B, N, T, H] for queries and [B, K, S, H] for keys/values (heads
before tokens, so every block's last two dims are (tokens, head_dim), the tiling Mosaic TPU and
Triton both accept); the wrapper transposes. Grouped-query K/V are never repeated: a query head's
program reads key/value head n // G through its index map, and the dK/dV program of a key/value
head loops over its G query heads. Causal masks are bottom-right aligned (query i at position
S - T + i). The backward runs on the fake-quantized Q, K, V (Attn-QAT and ablations) or on the
high-precision ones (drop-in QAT, PTQ), as the mode says.
Q, K, V are NVFP4 fake-quantized once, before the kernels, by an XLA pass: with 16-groups along
head_dim and no global scale this equals quantizing each 32-token tile inside the kernel, and the
fake-quantized values are exact in bfloat16. P~ (forward) and P (backward) are quantized inside
the kernels per tile, with 16-groups along keys; block maxima use masks, not a lane reshape.

Sequence lengths are padded to the tiles; padded keys are masked (zero probability), padded
queries are sliced off and receive a zero cotangent, so they contribute no gradient.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from kernels_pallas.fp4.reference import nvfp4_last_axis
from kernels_pallas.fp4_attention.reference import (
    BlockSizes,
    ModeFlags,
    check_inputs,
    fq_last,
    mode_flags,
)

MASK_VALUE = -0.7 * float(jnp.finfo(jnp.float32).max)  # finite: a max over it stays finite


def _dot(a, b, contract_a: int, contract_b: int):
    """Matmul contracting a's axis `contract_a` with b's `contract_b`, float32 accumulation."""
    hi = jax.lax.Precision.HIGHEST if a.dtype == jnp.float32 else None
    dims = (((contract_a,), (contract_b,)), ((), ()))
    return jax.lax.dot_general(a, b, dims, precision=hi, preferred_element_type=jnp.float32)


def _mask(q_start, k_start, bq: int, bk: int, s_real: int, causal: bool, offset: int):
    """[bq, bk] True where query q_start+r (position q_start+r+offset) may attend key k_start+c."""
    q_pos = q_start + offset + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 0)
    k_pos = k_start + jax.lax.broadcasted_iota(jnp.int32, (bq, bk), 1)
    mask = k_pos < s_real
    if causal:
        mask = mask & (q_pos >= k_pos)
    return mask


def _key_tiles_seen(i, bq: int, bk: int, num_k: int, causal: bool, offset: int):
    """Key tiles query tile i attends (causal: the tiles above the diagonal are skipped)."""
    if not causal:
        return num_k
    return jnp.minimum(jax.lax.div((i + 1) * bq + offset + bk - 1, bk), num_k)


def _fq_tile(p, flags: ModeFlags, group: int):
    return nvfp4_last_axis(p, group, reshape_free=True) if flags.quantize else p


def _forward_kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, *o_prime_ref, flags, causal, bq, bk,
                    s_real, offset, sm_scale, group):  # fmt: skip
    i = pl.program_id(2)
    q = q_ref[...]  # [bq, H], already fake-quantized
    num_k = k_ref.shape[0] // bk
    h = q.shape[-1]

    def body(j, carry):
        acc, acc_prime, m, denom = carry
        start = pl.multiple_of(j * bk, bk)
        k = k_ref[pl.ds(start, bk), :]
        v = v_ref[pl.ds(start, bk), :]
        mask = _mask(i * bq, start, bq, bk, s_real, causal, offset)
        s = jnp.where(mask, _dot(q, k, 1, 1) * sm_scale, MASK_VALUE)
        m_new = jnp.maximum(m, jnp.max(s, axis=-1, keepdims=True))
        alpha = jnp.exp(m - m_new)
        p = jnp.where(mask, jnp.exp(s - m_new), 0.0)  # P~: unnormalized, running max
        denom = alpha * denom + jnp.sum(p, axis=-1, keepdims=True)  # from unquantized P~
        acc = alpha * acc + _dot(_fq_tile(p, flags, group).astype(v.dtype), v, 1, 0)
        if flags.d_from_o_prime:  # O' = P~ V^F, kept for the backward's D
            acc_prime = alpha * acc_prime + _dot(p.astype(v.dtype), v, 1, 0)
        return acc, acc_prime, m_new, denom

    upper = _key_tiles_seen(i, bq, bk, num_k, causal, offset)
    zeros = jnp.zeros((bq, h), jnp.float32)
    init = (zeros, zeros, jnp.full((bq, 1), -jnp.inf, jnp.float32), jnp.zeros((bq, 1)))
    acc, acc_prime, m, denom = jax.lax.fori_loop(0, upper, body, init)
    o_ref[...] = (acc / denom).astype(o_ref.dtype)
    lse_ref[...] = m + jnp.log(denom)
    if flags.d_from_o_prime:
        o_prime_ref[0][...] = acc_prime / denom


def _dkdv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, d_ref, dk_ref, dv_ref, *, flags, causal,
                 bq, bk, s_real, offset, sm_scale, group):  # fmt: skip
    # q_ref, do_ref, lse_ref, d_ref: [G, Tp, .], the G query heads of this key/value head.
    j = pl.program_id(2)
    k = k_ref[...]
    v = v_ref[...]
    num_q = q_ref.shape[1] // bq

    def body(g, i, carry):
        dk, dv = carry
        start = pl.multiple_of(i * bq, bq)
        q = q_ref[g, pl.ds(start, bq), :]
        do = do_ref[g, pl.ds(start, bq), :]
        lse = lse_ref[g, pl.ds(start, bq), :]  # [bq, 1]
        d = d_ref[g, pl.ds(start, bq), :]
        mask = _mask(start, j * bk, bq, bk, s_real, causal, offset)
        s = jnp.where(mask, _dot(q, k, 1, 1) * sm_scale, MASK_VALUE)
        p = jnp.where(mask, jnp.exp(s - lse), 0.0)
        p_v = _fq_tile(p, flags, group) if flags.dv_from_quantized_p else p
        dv = dv + _dot(p_v.astype(do.dtype), do, 0, 0)
        ds = p * (_dot(do, v, 1, 1) - d) * sm_scale
        dk = dk + _dot(ds.astype(q.dtype), q, 0, 0)
        return dk, dv

    # Causal: query tiles entirely above the diagonal are skipped (in every head of the group).
    lower = jax.lax.div(jnp.maximum(j * bk - offset, 0), bq) if causal else 0
    zeros = jnp.zeros(k.shape, jnp.float32)

    def head(g, carry):
        return jax.lax.fori_loop(lower, num_q, functools.partial(body, g), carry)

    dk, dv = jax.lax.fori_loop(0, q_ref.shape[0], head, (zeros, zeros))
    dk_ref[...] = dk
    dv_ref[...] = dv


def _dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, d_ref, dq_ref, *, causal, bq, bk, s_real,
               offset, sm_scale):  # fmt: skip
    i = pl.program_id(2)
    q = q_ref[...]
    do = do_ref[...]
    lse = lse_ref[...]
    d = d_ref[...]
    num_k = k_ref.shape[0] // bk

    def body(j, dq):
        start = pl.multiple_of(j * bk, bk)
        k = k_ref[pl.ds(start, bk), :]
        v = v_ref[pl.ds(start, bk), :]
        mask = _mask(i * bq, start, bq, bk, s_real, causal, offset)
        s = jnp.where(mask, _dot(q, k, 1, 1) * sm_scale, MASK_VALUE)
        p = jnp.where(mask, jnp.exp(s - lse), 0.0)
        ds = p * (_dot(do, v, 1, 1) - d) * sm_scale
        return dq + _dot(ds.astype(k.dtype), k, 1, 0)

    upper = _key_tiles_seen(i, bq, bk, num_k, causal, offset)
    dq_ref[...] = jax.lax.fori_loop(0, upper, body, jnp.zeros(q.shape, jnp.float32))


def target_is_gpu() -> bool:
    """Whether pallas_calls are being lowered for a GPU (a function so tests can lower for CUDA)."""
    return jax.default_backend() == "gpu"


def _compiler_params(interpret: bool, h: int):
    """Triton on GPU (this jax lowers plain pallas_calls to Mosaic GPU by default, which needs
    explicit layouts this kernel does not spell out); the default Mosaic backend on TPU."""
    if interpret or not target_is_gpu():
        return None
    from jax.experimental.pallas import triton as pl_triton

    return pl_triton.CompilerParams(num_warps=4 if h <= 64 else 8, num_stages=2)


def _tile_spec(block: int, h: int):
    """Blocks of `block` tokens of one (batch, head): array [B, N, L, h]."""
    return pl.BlockSpec((None, None, block, h), lambda b, n, i: (b, n, i, 0))


def _full_spec(length: int, h: int, group: int = 1):
    """The whole sequence of one (batch, head); group > 1: of key/value head n // group."""
    return pl.BlockSpec((None, None, length, h), lambda b, n, i: (b, n // group, 0, 0))


def _group_spec(length: int, h: int, group: int):
    """The whole sequences of the `group` query heads of one (batch, key/value head)."""
    return pl.BlockSpec((None, group, length, h), lambda b, n, i: (b, n, 0, 0))


def _round_up(x: int, *blocks: int) -> int:
    m = math.lcm(*blocks)
    return -(-x // m) * m


def _prepare(q, k, v, flags: ModeFlags, bs: BlockSizes, quantize: bool):
    """(Fake-quantize,) move heads before tokens and pad: -> [B, N, Tp, H], [B, K, Sp, H] x2."""
    tp = _round_up(q.shape[1], bs.block_q, bs.block_q_dkv, bs.block_q_dq)
    sp = _round_up(k.shape[1], bs.block_k, bs.block_kv_dkv, bs.block_kv_dq)

    def prep(x, length):
        if quantize:
            x = fq_last(x, flags, bs.quant_group).astype(x.dtype)
        x = jnp.transpose(x, (0, 2, 1, 3))
        return jnp.pad(x, ((0, 0), (0, 0), (0, length - x.shape[2]), (0, 0)))

    return prep(q, tp), prep(k, sp), prep(v, sp)


@functools.partial(jax.jit, static_argnums=(3, 4, 5, 6))
def _forward(q, k, v, mode: str, causal: bool, bs: BlockSizes, interpret: bool):
    flags = check_inputs(q, k, v, mode, causal, bs)
    qf, kf, vf = _prepare(q, k, v, flags, bs, quantize=True)
    b, n, tp, h = qf.shape
    sp, group = kf.shape[2], n // kf.shape[1]
    kernel = functools.partial(
        _forward_kernel, flags=flags, causal=causal, bq=bs.block_q, bk=bs.block_k,
        s_real=k.shape[1], offset=k.shape[1] - q.shape[1], sm_scale=1.0 / math.sqrt(h),
        group=bs.quant_group,
    )  # fmt: skip
    out_shape = [
        jax.ShapeDtypeStruct((b, n, tp, h), q.dtype),
        jax.ShapeDtypeStruct((b, n, tp, 1), jnp.float32),  # L, a column so blocks stay 2-D
    ]
    out_specs = [_tile_spec(bs.block_q, h), _tile_spec(bs.block_q, 1)]
    if flags.d_from_o_prime:  # only the modes whose D uses O' pay for it
        out_shape.append(jax.ShapeDtypeStruct((b, n, tp, h), jnp.float32))
        out_specs.append(_tile_spec(bs.block_q, h))
    outs = pl.pallas_call(
        kernel,
        grid=(b, n, tp // bs.block_q),
        in_specs=[_tile_spec(bs.block_q, h), _full_spec(sp, h, group), _full_spec(sp, h, group)],
        out_specs=out_specs,
        out_shape=out_shape,
        interpret=interpret,
        compiler_params=_compiler_params(interpret, h),
        name="fp4_attention_forward",
    )(qf, kf, vf)
    o, lse = outs[0], outs[1]
    o_prime = outs[2] if flags.d_from_o_prime else None
    out = jnp.transpose(o[:, :, : q.shape[1]], (0, 2, 1, 3))
    if not flags.quantized_qkv_backward:  # FlashAttention's backward on the original Q, K, V
        qf, kf, vf = _prepare(q, k, v, flags, bs, quantize=False)
    return out, (qf, kf, vf, o, lse, o_prime)


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4, 5))
def _backward(mode, causal, bs: BlockSizes, interpret, t_real, s_real, res, do):
    flags = mode_flags(mode)
    qf, kf, vf, o, lse, o_prime = res
    b, n, tp, h = qf.shape
    kv_heads, sp = kf.shape[1], kf.shape[2]
    group = n // kv_heads
    do = jnp.transpose(do, (0, 2, 1, 3))
    do = jnp.pad(do, ((0, 0), (0, 0), (0, tp - t_real), (0, 0)))  # padded queries: zero cotangent
    o_for_d = o_prime if flags.d_from_o_prime else o.astype(jnp.float32)
    d = jnp.sum(do.astype(jnp.float32) * o_for_d, axis=-1, keepdims=True)  # [B, N, Tp, 1]
    common = dict(causal=causal, s_real=s_real, offset=s_real - t_real, sm_scale=1.0 / math.sqrt(h))
    dkdv = functools.partial(
        _dkdv_kernel, flags=flags, bq=bs.block_q_dkv, bk=bs.block_kv_dkv, group=bs.quant_group,
        **common,
    )  # fmt: skip
    group_q, full_k = _group_spec(tp, h, group), _full_spec(sp, h, group)
    dk, dv = pl.pallas_call(
        dkdv,
        grid=(b, kv_heads, sp // bs.block_kv_dkv),
        in_specs=[
            group_q,
            _tile_spec(bs.block_kv_dkv, h),
            _tile_spec(bs.block_kv_dkv, h),
            group_q,
            _group_spec(tp, 1, group),
            _group_spec(tp, 1, group),
        ],  # fmt: skip
        out_specs=[_tile_spec(bs.block_kv_dkv, h)] * 2,
        out_shape=[jax.ShapeDtypeStruct((b, kv_heads, sp, h), jnp.float32)] * 2,
        interpret=interpret,
        compiler_params=_compiler_params(interpret, h),
        name="fp4_attention_dkdv",
    )(qf, kf, vf, do, lse, d)
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, bq=bs.block_q_dq, bk=bs.block_kv_dq, **common),
        grid=(b, n, tp // bs.block_q_dq),
        in_specs=[
            _tile_spec(bs.block_q_dq, h),
            full_k,
            full_k,
            _tile_spec(bs.block_q_dq, h),
            _tile_spec(bs.block_q_dq, 1),
            _tile_spec(bs.block_q_dq, 1),
        ],  # fmt: skip
        out_specs=_tile_spec(bs.block_q_dq, h),
        out_shape=jax.ShapeDtypeStruct((b, n, tp, h), jnp.float32),
        interpret=interpret,
        compiler_params=_compiler_params(interpret, h),
        name="fp4_attention_dq",
    )(qf, kf, vf, do, lse, d)

    def back(x, length, dtype):
        return jnp.transpose(x[:, :, :length], (0, 2, 1, 3)).astype(dtype)

    return back(dq, t_real, qf.dtype), back(dk, s_real, kf.dtype), back(dv, s_real, vf.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6))
def fp4_flash_attention(q, k, v, mode: str, causal: bool, block_sizes: BlockSizes, interpret: bool):
    """Pallas FP4 attention, q [B, T, N, H], k/v [B, S, K, H] -> [B, T, N, H] (q.dtype)."""
    return _forward(q, k, v, mode, causal, block_sizes, interpret)[0]


def _vjp_fwd(q, k, v, mode, causal, block_sizes, interpret):
    out, res = _forward(q, k, v, mode, causal, block_sizes, interpret)
    lengths = jnp.zeros((q.shape[1], k.shape[1], 0), jnp.int8)  # static lengths as a shape
    return out, (res, lengths)


def _vjp_bwd(mode, causal, block_sizes, interpret, saved, do):
    res, lengths = saved
    t_real, s_real, _ = lengths.shape
    return _backward(mode, causal, block_sizes, interpret, t_real, s_real, res, do)


fp4_flash_attention.defvjp(_vjp_fwd, _vjp_bwd)
