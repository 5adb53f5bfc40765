"""Materialized (dense) reference of FP4 attention for every mode: the spec the kernel matches.

Shapes: q [B, T, N, H], k/v [B, S, K, H] with K dividing N (grouped-query attention: query head
n reads key/value head n // (N / K)); logits s [B, N, T, S]; lse [B, N, T]. Causal masking is
bottom-right aligned: query i sits at position S - T + i (T <= S; a query block after a cached
prefix), which is the usual causal mask when T == S.

Forward (Attn-QAT paper, Algorithm 2), written without a loop but with the kernel's tile order:
with key tiles of `block_k` and running maxima m_j = max(m_{j-1}, rowmax S_j),
  P~_j = exp(S_j - m_j)          (unnormalized, depends on the tiling and the running max)
  O  = sum_j exp(m_j - m_last) fq(P~_j) V^F_j / l,   O' = the same with P~_j,
  l  = sum_j exp(m_j - m_last) rowsum(P~_j),          L = m_last + log l.
fq(P~) uses 16-groups along keys inside each tile. Q/K/V are quantized in 16-groups along head_dim;
with no global scale this is the same per row whatever the 32-token tile (the training flags of the
official code turn the global scales off, so the attention does not offer them).

Backward (Algorithm 3): P = exp(S - L), dV = P_v^T dO, dP = dO V^F^T, dS = P (dP - D) / sqrt(H),
dQ = dS K^F, dK = dS^T Q^F, with (P_v, D) chosen by the mode; gradients pass straight through the
Q/K/V quantizers. Drop-in QAT (and PTQ's gradient) is the paper's "unchanged high-precision
FlashAttention backward": the same formulas on the high-precision Q, K, V (S recomputed from them),
with the forward's L and O, D = rowsum(dO * O) and dV = P^T dO. Attn-QAT and its two ablations
use the fake-quantized Q^F, K^F, V^F (the official `use_qat_qkv_backward=True`).

Reconstruction (not fixed by the paper or code): l and O' are accumulated in float32 (the official
reference rounds P~ to bf16 first); fp4_ptq's gradient is defined as drop-in QAT's; the ablations
keep Attn-QAT's quantized Q/K/V backward and remove one fix each.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from kernels_pallas.fp4.reference import NVFP4_BLOCK, nvfp4_last_axis

MODES = ("bf16", "fp4_ptq", "drop_in_qat", "attn_qat", "only_o_prime", "only_quantized_p")


class ModeFlags(NamedTuple):
    quantize: bool  # fake-quantize Q, K, V and the forward's P~ (NVFP4)
    d_from_o_prime: bool  # backward D = rowsum(dO * O') instead of rowsum(dO * O)
    dv_from_quantized_p: bool  # backward dV = fq(P)^T dO instead of P^T dO
    quantized_qkv_backward: bool  # backward on Q^F, K^F, V^F instead of the high-precision Q, K, V


MODE_FLAGS = {
    # No quantization: plain flash attention, gradients equal jax.grad of softmax attention.
    "bf16": ModeFlags(False, False, False, False),
    # Quantized forward used without training; its gradient is defined as drop-in QAT's.
    "fp4_ptq": ModeFlags(True, False, False, False),
    # FP4 forward + the high-precision FlashAttention backward: Q, K, V unquantized,
    # D = rowsum(dO*O), dV from unquantized P.
    "drop_in_qat": ModeFlags(True, False, False, False),
    # Both fixes on the quantized Q^F, K^F, V^F: D = rowsum(dO*O') and dV = fq(P)^T dO.
    "attn_qat": ModeFlags(True, True, True, True),
    # Ablation, fix 1 alone ("high-precision O' in D"): D from O', dV from unquantized P.
    "only_o_prime": ModeFlags(True, True, False, True),
    # Ablation, fix 2 alone ("low-precision P in dV"): dV from fq(P), D from the quantized O.
    "only_quantized_p": ModeFlags(True, False, True, True),
}


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tiles of the FP4 attention kernels (and of the reference's tile order).

    block_q, block_k: forward query/key tiles. block_k fixes which running max each P~ tile is
    quantized with, so it changes the forward's numbers; block_q does not (P is quantized per row).
    The backward tiles change only the summation order. quant_group: NVFP4 block (16) along
    head_dim for Q/K/V and along keys for P; every key tile must be a multiple of it.
    """

    block_q: int = 32
    block_k: int = 32
    block_q_dkv: int = 32
    block_kv_dkv: int = 32
    block_q_dq: int = 32
    block_kv_dq: int = 32
    quant_group: int = NVFP4_BLOCK


def mode_flags(mode: str) -> ModeFlags:
    if mode not in MODE_FLAGS:
        raise ValueError(f"mode={mode!r} is not one of {MODES}")
    return MODE_FLAGS[mode]


def check_inputs(q, k, v, mode: str, causal: bool, bs: BlockSizes) -> ModeFlags:
    """Validate shapes and tiles; returns the mode's flags. Errors name the field to change."""
    flags = mode_flags(mode)
    if (
        q.ndim != 4
        or k.shape != v.shape
        or q.shape[0] != k.shape[0]
        or q.shape[3] != k.shape[3]
        or q.shape[2] % k.shape[2]
    ):
        raise ValueError(
            f"expected q [B,T,N,H], k/v [B,S,K,H] with K dividing N; got {q.shape}, {k.shape}, "
            f"{v.shape}"
        )
    if causal and q.shape[1] > k.shape[1]:
        raise ValueError(
            f"causal=True needs T <= S (queries are the last T positions), got T={q.shape[1]}, "
            f"S={k.shape[1]}"
        )
    g = bs.quant_group
    if flags.quantize:
        if q.shape[-1] % g:
            raise ValueError(f"head_dim {q.shape[-1]} must be a multiple of quant_group={g}")
        for name in ("block_k", "block_kv_dkv", "block_kv_dq"):
            if getattr(bs, name) % g:
                raise ValueError(f"BlockSizes.{name}={getattr(bs, name)} must be a multiple of {g}")
    return flags


def fq_last(x: jax.Array, flags: ModeFlags, group: int) -> jax.Array:
    """NVFP4 fake quantization along the last axis (float32 out), identity when not quantizing."""
    return nvfp4_last_axis(x, group) if flags.quantize else x.astype(jnp.float32)


def _pad_keys(x: jax.Array, axis: int, multiple: int) -> jax.Array:
    pad = -x.shape[axis] % multiple
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, pad)
    return jnp.pad(x, widths)


def repeat_kv(x: jax.Array, num_heads: int) -> jax.Array:
    """[B, S, K, H] -> [B, S, N, H]: key/value head n // (N / K) for query head n."""
    return jnp.repeat(x, num_heads // x.shape[2], axis=2)


def sum_groups(dx: jax.Array, num_kv_heads: int) -> jax.Array:
    """[B, S, N, H] -> [B, S, K, H]: a key/value head's gradient sums over its query heads."""
    b, s, n, h = dx.shape
    return dx.reshape(b, s, num_kv_heads, n // num_kv_heads, h).sum(3)


def _logits_and_mask(qf, kf, causal: bool, s_real: int):
    """s [B, N, T, Sp] (float32) and mask [T, Sp] (True = attend) for padded keys kf (N heads)."""
    t, sp = qf.shape[1], kf.shape[1]
    hi = jax.lax.Precision.HIGHEST
    s = jnp.einsum("BTNH,BSNH->BNTS", qf, kf, precision=hi) / math.sqrt(qf.shape[-1])
    kpos = jnp.arange(sp)[None, :]
    mask = kpos < s_real
    if causal:  # bottom-right: query i is at position s_real - t + i
        mask = mask & (kpos <= jnp.arange(t)[:, None] + (s_real - t))
    return s, mask


class Forward(NamedTuple):
    o: jax.Array  # [B, T, N, H] float32
    lse: jax.Array  # [B, N, T] float32, logsumexp of the (quantized-input) logits
    o_prime: jax.Array  # [B, T, N, H] float32, P~ V^F / l (equals o when not quantizing)
    qf: jax.Array  # the Q, K, V the backward uses, float32: fake-quantized, or the
    kf: jax.Array  # high-precision inputs when the mode's backward is FlashAttention's;
    vf: jax.Array  # k, v keep their K heads [B, S, K, H]


@functools.partial(jax.jit, static_argnames=("mode", "causal", "block_sizes"))
def forward(q, k, v, *, mode: str, causal: bool, block_sizes: BlockSizes) -> Forward:
    """Dense forward with the kernel's tile order (see the module docstring)."""
    bs = block_sizes
    flags = check_inputs(q, k, v, mode, causal, bs)
    g, bk, s_real = bs.quant_group, bs.block_k, k.shape[1]
    qf, kf_grouped, vf_grouped = (fq_last(x, flags, g) for x in (q, k, v))
    kf = _pad_keys(repeat_kv(kf_grouped, q.shape[2]), 1, bk)
    vf = _pad_keys(repeat_kv(vf_grouped, q.shape[2]), 1, bk)
    s, mask = _logits_and_mask(qf, kf, causal, s_real)
    b, n, t, sp = s.shape
    s = jnp.where(mask, s, -jnp.inf)
    tile_max = s.reshape(b, n, t, sp // bk, bk).max(-1)  # [B, N, T, nk]
    m = jax.lax.cummax(tile_max, axis=3)  # running max after each tile (finite: tile 0 has key 0)
    m_keys = jnp.repeat(m, bk, axis=3)  # [B, N, T, Sp]
    p_tilde = jnp.where(mask, jnp.exp(s - m_keys), 0.0)
    p_quant = fq_last(p_tilde, flags, g)  # 16-groups along keys, inside each tile
    w = jnp.exp(m_keys - m[..., -1:])  # rescaling of tile j to the final max
    denom = jnp.sum(w * p_tilde, axis=-1)  # l, from the unquantized P~
    hi = jax.lax.Precision.HIGHEST
    o = jnp.einsum("BNTS,BSNH->BTNH", w * p_quant, vf, precision=hi)
    o_prime = jnp.einsum("BNTS,BSNH->BTNH", w * p_tilde, vf, precision=hi)
    inv_l = jnp.transpose(1.0 / denom, (0, 2, 1))[..., None]  # [B, T, N, 1]
    lse = m[..., -1] + jnp.log(denom)
    if not flags.quantized_qkv_backward:
        qf, kf_grouped, vf_grouped = (x.astype(jnp.float32) for x in (q, k, v))
    return Forward(o * inv_l, lse, o_prime * inv_l, qf, kf_grouped, vf_grouped)


class Backward(NamedTuple):
    dq: jax.Array
    dk: jax.Array
    dv: jax.Array
    p: jax.Array  # [B, N, T, S] recomputed exp(S - L)
    dp: jax.Array  # [B, N, T, S] dO V^F^T
    d: jax.Array  # [B, N, T] the D the mode uses


@functools.partial(jax.jit, static_argnames=("mode", "causal", "block_sizes"))
def backward(fwd: Forward, do, *, mode: str, causal: bool, block_sizes: BlockSizes) -> Backward:
    """Dense backward (Algorithm 3) with the mode's choice of D and of P in dV (float32)."""
    flags = mode_flags(mode)
    g, s_real, n = block_sizes.quant_group, fwd.kf.shape[1], fwd.qf.shape[2]
    kf = _pad_keys(repeat_kv(fwd.kf, n), 1, g)
    vf = _pad_keys(repeat_kv(fwd.vf, n), 1, g)
    s, mask = _logits_and_mask(fwd.qf, kf, causal, s_real)
    p = jnp.where(mask, jnp.exp(s - fwd.lse[..., None]), 0.0)
    do = do.astype(jnp.float32)
    o_for_d = fwd.o_prime if flags.d_from_o_prime else fwd.o
    d = jnp.transpose(jnp.sum(do * o_for_d, axis=-1), (0, 2, 1))  # [B, N, T]
    p_v = fq_last(p, flags, g) if flags.dv_from_quantized_p else p
    hi = jax.lax.Precision.HIGHEST
    dv = jnp.einsum("BNTS,BTNH->BSNH", p_v, do, precision=hi)
    dp = jnp.einsum("BTNH,BSNH->BNTS", do, vf, precision=hi)
    ds = p * (dp - d[..., None]) / math.sqrt(fwd.qf.shape[-1])
    dq = jnp.einsum("BNTS,BSNH->BTNH", ds, kf, precision=hi)
    dk = jnp.einsum("BNTS,BTNH->BSNH", ds, fwd.qf, precision=hi)
    kv_heads = fwd.kf.shape[2]
    dk, dv = (sum_groups(x[:, :s_real], kv_heads) for x in (dk, dv))
    return Backward(dq, dk, dv, p[..., :s_real], dp[..., :s_real], d)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5))
def fp4_attention_reference(q, k, v, mode: str, causal: bool, block_sizes: BlockSizes):
    """Dense FP4 attention with the mode's custom gradient; output in q.dtype."""
    return forward(q, k, v, mode=mode, causal=causal, block_sizes=block_sizes).o.astype(q.dtype)


def _ref_fwd(q, k, v, mode, causal, block_sizes):
    fwd = forward(q, k, v, mode=mode, causal=causal, block_sizes=block_sizes)
    dtypes = tuple(jnp.zeros((0,), x.dtype) for x in (q, k, v))  # residuals must be arrays
    return fwd.o.astype(q.dtype), (fwd, dtypes)


def _ref_bwd(mode, causal, block_sizes, res, do):
    fwd, (qt, kt, vt) = res
    bwd = backward(fwd, do, mode=mode, causal=causal, block_sizes=block_sizes)
    return bwd.dq.astype(qt.dtype), bwd.dk.astype(kt.dtype), bwd.dv.astype(vt.dtype)


fp4_attention_reference.defvjp(_ref_fwd, _ref_bwd)
