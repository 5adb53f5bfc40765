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
    return e2m1_round_scaled(y, jnp.float32(1.0))


def e2m1_round_scaled(x: jax.Array, scale: jax.Array) -> jax.Array:
    """E2M1 rounding of x / scale in grid units, decided exactly without dividing.

    |x| is compared with bound * scale: a bound has at most 3 significant bits and the scales here
    (E4M3: 4 bits; E8M0: powers of two) at most 4, so every product is exact in float32 and each
    tie is decided exactly. Dividing first is not: XLA may turn x / scale into x * (1 / scale),
    which moves a tie such as 2.34375 / 0.9375 = 2.5 to 2.5000002 (one grid step off). `scale` must
    be positive and broadcast against x.
    """
    a = jnp.abs(x.astype(jnp.float32))
    q = jnp.zeros_like(a)
    for bound, step, tie_up in _E2M1_STEPS:
        t = bound * scale
        crossed = (a >= t) if tie_up else (a > t)
        q = q + jnp.where(crossed, step, 0.0)
    return jnp.where(x < 0, -q, q)


def nvfp4_block_scale(amax: jax.Array) -> jax.Array:
    """E4M3 rounding of min(amax / 6, 448), exact (nearest, ties to even), for amax >= 0.

    The float32 quotient amax / 6 can be one ulp off (XLA may multiply by 1/6 instead), which
    flips the rounding of amax just below 6 times an E4M3 midpoint. So the quotient only picks
    the two E4M3 neighbours lo < hi around it, and the exact comparison of amax with
    6 * (lo + hi) / 2 (at most 7 significant bits) decides between them.
    """
    amax = amax.astype(jnp.float32)
    y = jnp.minimum(amax / E2M1_MAX, E4M3_MAX)
    bits = jax.lax.bitcast_convert_type(y, jnp.int32)
    normal = y >= 2.0**-6
    lo_normal = jax.lax.bitcast_convert_type(bits & jnp.int32(-0x100000), jnp.float32)
    ulp_normal = jax.lax.bitcast_convert_type(bits & 0x7F800000, jnp.float32) * 0.125
    sub_units = jnp.floor(y * 512.0)  # subnormals lie on a grid of 2^-9
    lo = jnp.where(normal, lo_normal, sub_units / 512.0)
    ulp = jnp.where(normal, ulp_normal, 2.0**-9)
    lo_odd = jnp.where(
        normal,
        (jnp.right_shift(bits, 20) & 1) == 1,
        sub_units - 2.0 * jnp.floor(sub_units * 0.5) == 1.0,
    )
    tie = E2M1_MAX * (lo + 0.5 * ulp)
    up = (amax > tie) | ((amax == tie) & lo_odd)
    return jnp.minimum(jnp.where(up, lo + ulp, lo), E4M3_MAX)


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

    Without a global scale every step is exact (scale = e4m3(min(amax / 6, 448)), elements
    e2m1(x / scale), both rounded to nearest even; tests/test_fp4_exact.py enumerates the ties).
    global_scale: the optional second level, s_enc = 6 * 448 / amax(x) over all of `x` (callers
    pass one tile): scale = e4m3((amax_block * s_enc) / 6), elements e2m1((x * s_enc) / scale),
    dequantized with s_dec = 1 / s_enc; the products with s_enc are rounded to float32 first.
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
    scale = nvfp4_block_scale(amax * s_enc if global_scale else amax)
    safe = jnp.where(scale > 0, scale, 1.0)
    # Elements are rounded as e2m1(x * s_enc / scale) by exact comparisons (see e2m1_round_scaled)
    # and dequantized as e2m1 * scale * s_dec.
    q = e2m1_round_scaled(g * s_enc if global_scale else g, safe) * (scale / s_enc)
    return jnp.where(scale > 0, q, 0.0).reshape(xf.shape)


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
    scale = e8m0_from_exponent(jnp.clip(exp - 2, -127, 127))
    q = jnp.where(amax > 0, e2m1_round_scaled(g, scale) * scale, 0.0)
    return q.reshape(xf.shape)


def e8m0_from_exponent(exp: jax.Array) -> jax.Array:
    """2^exp as float32, built from exponent bits so it is exact (exp in [-127, 127]).

    Not exp2: jitted on CPU it is a polynomial, and exp2(15.) gives 32767.984. 2^-127 is the one
    float32 subnormal an E8M0 scale can be.
    """
    exp = exp.astype(jnp.int32)
    normal = jnp.left_shift(jnp.maximum(exp, -126) + 127, 23)
    bits = jnp.where(exp >= -126, normal, jnp.int32(1 << 22))
    return jax.lax.bitcast_convert_type(bits, jnp.float32)
