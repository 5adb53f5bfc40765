"""NVFP4 / MXFP4 fake quantization in plain jnp, written with elementwise ops only.

Every function here is a composition of comparisons, selects, integer bit operations, reshapes and
reductions, so the same code runs inside a Pallas kernel body on GPU or TPU (no float4/float8
casts, which Triton and Mosaic do not all lower). Tests check the results against jnp casts to
`float4_e2m1fn` / `float8_e4m3fn`.

NVFP4 (official Attn-QAT code, nvfp4_utils.py): elements E2M1 {0, .5, 1, 1.5, 2, 3, 4, 6}, rounded
to nearest even and saturated at +-6; blocks of 16 along the quantized axis; block scale
amax/6 rounded to E4M3 (clipped to 448 first: E4M3 has no infinity); dequantized x = e2m1 * scale.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

E2M1_MAX = 6.0
E4M3_MAX = 448.0
NVFP4_BLOCK = 16
MXFP4_BLOCK = 32

# Rounding thresholds between consecutive E2M1 magnitudes with the step added when crossed.
# At a tie the value goes to the neighbour with an even mantissa: 0.25->0, 0.75->1, 1.25->1,
# 1.75->2, 2.5->2, 3.5->4, 5->4. `inclusive` marks the ties that round up.
_E2M1_STEPS = (
    (0.25, 0.5, False),
    (0.75, 0.5, True),
    (1.25, 0.5, False),
    (1.75, 0.5, True),
    (2.5, 1.0, False),
    (3.5, 1.0, True),
    (5.0, 2.0, False),
)


def e2m1_round(y: jax.Array) -> jax.Array:
    """Round float32 values to E2M1 (nearest, ties to even mantissa, saturating at +-6)."""
    a = jnp.abs(y)
    q = jnp.zeros_like(a)
    for bound, step, tie_up in _E2M1_STEPS:
        crossed = (a >= bound) if tie_up else (a > bound)
        q = q + jnp.where(crossed, step, 0.0)
    return jnp.where(y < 0, -q, q)


def e4m3_round_nonneg(s: jax.Array) -> jax.Array:
    """Round non-negative float32 values in [0, 448] to E4M3 (nearest even, with subnormals).

    Normal range (>= 2^-6): keep 3 mantissa bits by round-to-nearest-even on the float32 bit
    pattern (a carry into the exponent is the correct result). Subnormals (< 2^-6) lie on a grid
    of 2^-9, rounded with floor and a tie-to-even fix.
    """
    s = s.astype(jnp.float32)
    bits = jax.lax.bitcast_convert_type(s, jnp.int32)
    lsb = jnp.right_shift(bits, 20) & 1
    rounded = (bits + (0x7FFFF + lsb)) & jnp.int32(-0x100000)  # clear the 20 dropped bits
    normal = jax.lax.bitcast_convert_type(rounded, jnp.float32)
    y = s * 512.0  # subnormal grid 2^-9 -> integers 0..8
    fl = jnp.floor(y)
    frac = y - fl
    odd = (fl - 2.0 * jnp.floor(fl * 0.5)) == 1.0
    up = (frac > 0.5) | ((frac == 0.5) & odd)
    sub = (fl + jnp.where(up, 1.0, 0.0)) / 512.0
    return jnp.where(s >= 2.0**-6, normal, sub)


def _group(x: jax.Array, block: int) -> jax.Array:
    """[..., D] -> [..., D // block, block]."""
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


def _group_amax_masked(a: jax.Array, block: int) -> jax.Array:
    """Block amax of |x| broadcast back to x's shape, via one masked row-max per block.

    Equivalent to the reshape form; used inside kernels because splitting the minor (lane) axis
    by a reshape is not lowered by every Pallas backend, while iota/compare/select/max are.
    """
    gid = jax.lax.broadcasted_iota(jnp.int32, a.shape, a.ndim - 1) // block
    out = jnp.zeros_like(a)
    for g in range(a.shape[-1] // block):
        in_g = gid == g
        out = jnp.where(in_g, jnp.max(jnp.where(in_g, a, 0.0), axis=-1, keepdims=True), out)
    return out


def nvfp4_last_axis(
    x: jax.Array, block: int = NVFP4_BLOCK, global_scale: bool = False, reshape_free: bool = False
) -> jax.Array:
    """NVFP4 fake quantization along the last axis (size divisible by `block`), float32 out.

    global_scale: the optional second level, s_enc = 6 * 448 / amax(x) over all of `x` (callers
    pass one tile), block scale e4m3(amax_block / 6 * s_enc), dequantized with s_dec = 1 / s_enc.
    Blocks whose E4M3 scale rounds to zero are flushed to zero (their x / scale is undefined).
    Reconstruction: the flush-to-zero of underflowing scales (alternative: clamp the scale to the
    smallest E4M3 subnormal 2^-9, which keeps tiny blocks at the cost of saturating them).
    reshape_free: compute block maxima with masks instead of a reshape (for kernel bodies).
    """
    xf = x.astype(jnp.float32)
    if reshape_free:
        g, amax = xf, _group_amax_masked(jnp.abs(xf), block)
    else:
        g = _group(xf, block)
        amax = jnp.max(jnp.abs(g), axis=-1, keepdims=True)
    if global_scale:
        tmax = jnp.max(jnp.abs(xf))
        s_enc = jnp.where(tmax > 0, E2M1_MAX * E4M3_MAX / jnp.where(tmax > 0, tmax, 1.0), 1.0)
    else:
        s_enc = jnp.float32(1.0)
    scale = e4m3_round_nonneg(jnp.minimum(amax / E2M1_MAX * s_enc, E4M3_MAX)) / s_enc
    safe = jnp.where(scale > 0, scale, 1.0)
    q = jnp.where(scale > 0, e2m1_round(g / safe) * scale, 0.0)
    return q.reshape(xf.shape)


def mxfp4_last_axis(x: jax.Array, block: int = MXFP4_BLOCK) -> jax.Array:
    """MXFP4 fake quantization along the last axis: E8M0 scale 2^(floor(log2 amax) - 2).

    The shared exponent follows the OCP MX spec (emax of E2M1 is 2); elements saturate at +-6.
    Reconstruction: MXFP4 is only an option here (Attn-QAT uses NVFP4); alternative considered:
    the round-up exponent ceil(log2(amax / 6)), which avoids saturation but wastes range.
    """
    xf = x.astype(jnp.float32)
    g = _group(xf, block)
    amax = jnp.max(jnp.abs(g), axis=-1, keepdims=True)
    bits = jax.lax.bitcast_convert_type(amax, jnp.int32)
    exp = (jnp.right_shift(bits, 23) & 0xFF) - 127  # floor(log2 amax) for normal floats
    exp = jnp.clip(exp - 2, -127, 127)
    scale = jnp.exp2(exp.astype(jnp.float32))
    q = jnp.where(amax > 0, e2m1_round(g / scale) * scale, 0.0)
    return q.reshape(xf.shape)
