"""Gradient fidelity of FP4 attention: cosine similarity of dQ, dK, dV from each attention mode's
backward against float64 softmax attention on the same inputs, over sequence length.

The spec's figure "cosine similarity of dQ/dK/dV vs the FP32 reference on fixed batches"; the
official code's PR #1460 reports about 0.98 for QAT gradients against an FP32 naive reference.
One call of `measure` (one seed) draws, for every input distribution and length, q, k, v and an
output cotangent dO of shape [1, L, heads, head_dim], rounds them to `dtype`, runs every mode's
forward and custom backward (dense reference of `kernels_pallas.fp4_attention`, the spec the
Pallas kernel matches) on those arrays, and compares the three gradients with the closed-form
float64 gradients of causal softmax attention on the very same values (so input rounding is not
counted as the attention's error).

Input distributions (the spec gives none for this figure): "gaussian" draws q, k, v, dO i.i.d.
N(0, 1); "k_outliers" adds a fixed offset to a few channels of K, the spec's suggested stress test
for heavy-tailed keys. The offset is the same for every key, so it leaves exact softmax
attention (and its gradients) unchanged, but it dominates the amax of its 16-group and so
coarsens the NVFP4 grid of the other 15 channels.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np

from kernels_pallas.fp4.reference import nvfp4_last_axis
from kernels_pallas.fp4_attention import MODE_FLAGS, MODES, BlockSizes, fp4_attention
from kernels_pallas.fp4_attention.reference import backward, forward
from shared.config import NonNegativeInt, PositiveFloat, PositiveInt
from shared.train import preemption

TENSORS = ("dq", "dk", "dv")
DISTRIBUTIONS = ("gaussian", "k_outliers")


@dataclasses.dataclass(frozen=True)
class FidelityConfig:
    lengths: tuple[PositiveInt, ...] = (128, 256, 512, 1024, 2048)  # sequence lengths L (T = S)
    num_heads: PositiveInt = 2  # heads per draw (all heads enter one cosine per tensor)
    head_dim: PositiveInt = 128  # the official training kernel supports 128 only
    # dtype of q, k, v, dO and of each mode's output and gradients (the paper trains in bf16)
    dtype: Literal["bfloat16", "float32"] = "bfloat16"
    distributions: tuple[str, ...] = DISTRIBUTIONS  # input distributions, see the module doc
    outlier_channels: NonNegativeInt = 4  # k_outliers: channels 0, H/n, 2H/n, ... of K shifted
    outlier_offset: PositiveFloat = 10.0  # k_outliers: the shift, in units of K's std (1)
    modes: tuple[str, ...] = MODES  # attention modes of kernels_pallas.fp4_attention

    def validate(self) -> None:
        if self.head_dim % 16:
            raise ValueError(f"fidelity.head_dim={self.head_dim}: must be a multiple of 16 (NVFP4)")
        if not self.lengths:
            raise ValueError("fidelity.lengths is empty: give at least one sequence length")
        bad = [m for m in self.modes if m not in MODES] + [
            d for d in self.distributions if d not in DISTRIBUTIONS
        ]
        if bad or not self.modes or not self.distributions:
            raise ValueError(
                f"fidelity.modes / fidelity.distributions: {bad or 'empty'}; choose non-empty "
                f"subsets of {MODES} and {DISTRIBUTIONS}"
            )
        if self.outlier_channels > self.head_dim:
            raise ValueError(f"fidelity.outlier_channels must be <= head_dim={self.head_dim}")

    def __post_init__(self):
        self.validate()


def metric_key(mode: str, distribution: str, tensor: str, length: int) -> str:
    """The results.json key of one cosine: '<mode>/<distribution>_<tensor>_cos_L<length>'."""
    return f"{mode}/{distribution}_{tensor}_cos_L{length}"


def cosine(a, b) -> float:
    """<a, b> / (|a| |b|) over all elements, in float64 (the spec's per-tensor gradient cosine)."""
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def reference_grads(q, k, v, do) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dQ, dK, dV of causal softmax attention in float64 (closed form; all [B, L, N, H]).

    O = softmax(Q K^T / sqrt(H)) V; dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(P dP)),
    dQ = dS K / sqrt(H), dK = dS^T Q / sqrt(H).
    """
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    scale = 1.0 / math.sqrt(q.shape[-1])
    s = np.einsum("btnh,bsnh->bnts", q, k) * scale
    t = s.shape[-1]
    s = np.where(np.tril(np.ones((t, t), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    dv = np.einsum("bnts,btnh->bsnh", p, do)
    dp = np.einsum("btnh,bsnh->bnts", do, v)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = np.einsum("bnts,bsnh->btnh", ds, k) * scale
    dk = np.einsum("bnts,btnh->bsnh", ds, q) * scale
    return dq, dk, dv


def draw_inputs(key: jax.Array, cfg: FidelityConfig, length: int, distribution: str):
    """q, k, v, dO: [1, length, heads, head_dim] in cfg.dtype (see the module doc)."""
    shape = (1, length, cfg.num_heads, cfg.head_dim)
    q, k, v, do = jax.random.normal(key, (4, *shape), jnp.float32)
    if distribution == "k_outliers" and cfg.outlier_channels:
        channels = np.arange(cfg.outlier_channels) * (cfg.head_dim // cfg.outlier_channels)
        k = k.at[..., channels].add(cfg.outlier_offset)
    return tuple(x.astype(cfg.dtype) for x in (q, k, v, do))


def mode_grads(q, k, v, do, mode: str) -> tuple[jax.Array, jax.Array, jax.Array]:
    """dQ, dK, dV from the mode's custom backward (causal, dense reference implementation)."""

    def attend(q, k, v):
        return fp4_attention(q, k, v, mode=mode, causal=True, impl="reference")

    _, vjp = jax.vjp(attend, q, k, v)
    return vjp(do)


_mode_grads = jax.jit(mode_grads, static_argnames="mode")


@jax.jit
def p_mass_kept(q, k, v, do) -> jax.Array:
    """sum fq(P) / sum P for the P that Attn-QAT's backward recomputes and quantizes for dV.

    Why dV's cosine can fall with length: the normalized P = exp(S - L) of a causal row over n
    keys is about 1/n, and a 16-key block whose largest P is below 6 * 2^-10 gets an E4M3 scale
    that rounds to zero (smallest subnormal 2^-9), so the block is flushed.
    """
    bs = BlockSizes()
    fwd = forward(q, k, v, mode="attn_qat", causal=True, block_sizes=bs)
    p = backward(fwd, do, mode="attn_qat", causal=True, block_sizes=bs).p
    p = jnp.pad(p, ((0, 0),) * 3 + ((0, -p.shape[-1] % bs.quant_group),))  # zeros: amax unchanged
    return nvfp4_last_axis(p, bs.quant_group).sum() / p.sum()


def measure(cfg: FidelityConfig, seed: int) -> dict[str, float]:
    """Every (mode, distribution, tensor, length) cosine of one seed (keys from `metric_key`),
    and '<mode>/<distribution>_p_mass_kept_L<length>' for the modes whose dV uses fq(P)."""
    out: dict[str, float] = {}
    root = jax.random.key(seed)
    for d, distribution in enumerate(cfg.distributions):
        for length in cfg.lengths:
            preemption.check(f"gradient fidelity {distribution}, L={length}")
            # The same draw for every mode; a different one per (distribution, length).
            key = jax.random.fold_in(jax.random.fold_in(root, d), length)
            q, k, v, do = draw_inputs(key, cfg, length, distribution)
            ref = reference_grads(*(np.asarray(x.astype(jnp.float32)) for x in (q, k, v, do)))
            for mode in cfg.modes:
                grads = _mode_grads(q, k, v, do, mode=mode)
                for name, g, r in zip(TENSORS, grads, ref):
                    out[metric_key(mode, distribution, name, length)] = cosine(
                        np.asarray(g.astype(jnp.float32)), r
                    )
            # The modes whose dV uses fq(P) (they share P): how much of P's mass survives.
            fq_p_modes = [m for m in cfg.modes if MODE_FLAGS[m].dv_from_quantized_p]
            if fq_p_modes:
                kept = float(p_mass_kept(q, k, v, do))
                out |= {f"{m}/{distribution}_p_mass_kept_L{length}": kept for m in fq_p_modes}
    return out
