"""NVFP4 / MXFP4 fake quantization: rounding table, agreement with jnp casts, scales, gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from kernels_pallas.fp4 import (
    e2m1_round,
    mxfp4_fake_quantize,
    nvfp4_block_scale,
    nvfp4_fake_quantize,
)
from kernels_pallas.fp4.reference import nvfp4_last_axis

E2M1_GRID = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _bucketize_e2m1(x: np.ndarray) -> np.ndarray:
    """Transcription of the official reference: bucketize on midpoints + a ties-to-even fix."""
    bounds = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    a = np.abs(x)
    idx = np.searchsorted(bounds, a, side="left")  # a == bound -> lower bucket
    tie = np.isin(a, bounds)
    # At a tie pick the neighbour with an even mantissa bit (odd grid index means mantissa 1).
    up_ties = tie & (idx % 2 == 1)
    idx = idx + up_ties
    return np.sign(x) * E2M1_GRID[idx]


def test_e2m1_rounding_table():
    x = jnp.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 1e9, -0.25, -5.0, -7.0, 0.0, 0.26])
    want = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0, 0.0, -4.0, -6.0, 0.0, 0.5]
    np.testing.assert_array_equal(np.asarray(e2m1_round(x)), want)


def test_e2m1_matches_float4_cast_and_bucketize():
    x = jax.random.normal(jax.random.key(0), (20000,)) * 3.0
    grid = jnp.arange(-8.0, 8.0, 0.125)  # every tie and grid point, exactly
    x = jnp.concatenate([x, grid])
    ours = np.asarray(jax.jit(e2m1_round)(x))
    cast = np.asarray(x.astype(jnp.float4_e2m1fn).astype(jnp.float32))
    np.testing.assert_array_equal(ours, cast)
    np.testing.assert_array_equal(ours, _bucketize_e2m1(np.asarray(x)))


def test_block_scale_matches_float8_cast_including_subnormals():
    key1, _ = jax.random.split(jax.random.key(1))
    mag = jnp.exp(jax.random.uniform(key1, (50000,), minval=-16.0, maxval=6.2))
    ties = jnp.arange(0, 64) * 2.0**-10  # subnormal grid and its midpoints
    s = jnp.minimum(jnp.concatenate([mag, ties, jnp.array([448.0, 0.0])]), 448.0)
    amax = np.asarray(s * 6.0, np.float64)
    cast = (amax / 6).astype(jnp.float8_e4m3fn).astype(np.float64)  # rounded once, from float64
    got = np.asarray(jax.jit(nvfp4_block_scale)(jnp.asarray(amax, jnp.float32)), np.float64)
    np.testing.assert_array_equal(got, cast)


def _nvfp4_numpy(x: np.ndarray) -> np.ndarray:
    """Independent transcription with ml_dtypes casts: scale = e4m3(min(amax/6, 448))."""
    g = x.reshape(-1, 16).astype(np.float32)
    amax = np.abs(g).max(-1, keepdims=True)
    scale = np.minimum(amax / 6, 448).astype(jnp.float8_e4m3fn).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (g / scale).astype(jnp.float4_e2m1fn).astype(np.float32) * scale
    return np.where(scale > 0, q, 0.0).reshape(x.shape)


def test_nvfp4_matches_cast_transcription():
    x = np.asarray(jax.random.normal(jax.random.key(2), (64, 128)))
    x = x * np.exp(np.linspace(-12, 8, 64))[:, None]  # tiny to huge rows
    np.testing.assert_array_equal(np.asarray(nvfp4_fake_quantize(jnp.asarray(x))), _nvfp4_numpy(x))


def test_nvfp4_hand_cases():
    # amax 15 -> scale 2.5 (exact in E4M3); 1/2.5 = 0.4 -> 0.5 -> 1.25.
    x = jnp.arange(16.0)
    want = 2.5 * np.asarray(e2m1_round(jnp.arange(16.0) / 2.5))
    np.testing.assert_array_equal(np.asarray(nvfp4_fake_quantize(x)), want)
    assert float(nvfp4_fake_quantize(x)[15]) == 15.0  # the block max is exact
    # All-zero blocks stay zero (no 0/0); a block of tiny values whose scale underflows E4M3
    # (amax/6 < 2^-10) is flushed to zero.
    z = jnp.concatenate([jnp.zeros(16), jnp.full(16, 1e-3)])
    np.testing.assert_array_equal(np.asarray(nvfp4_fake_quantize(z)), np.zeros(32))


def test_e4m3_scale_is_clipped_not_nan():
    # amax/6 = 1e4 would overflow E4M3 (NaN); the scale clips to 448 and elements saturate at 6.
    x = jnp.array([6e4] + [1.0] * 15)
    q = np.asarray(nvfp4_fake_quantize(x))
    assert np.all(np.isfinite(q))
    assert q[0] == 6 * 448.0


def test_axis_blocks_and_global_scale():
    x = jax.random.normal(jax.random.key(3), (32, 48))
    np.testing.assert_array_equal(
        np.asarray(nvfp4_fake_quantize(x, axis=0)), np.asarray(nvfp4_fake_quantize(x.T).T)
    )
    with pytest.raises(ValueError, match="block=16"):
        nvfp4_fake_quantize(jnp.ones((3, 20)))
    # The global level rescales blocks so the largest block scale is 448; values stay close.
    g = nvfp4_fake_quantize(x, global_scale=True)
    assert float(jnp.max(jnp.abs(g - x))) <= float(jnp.max(jnp.abs(x))) / 6 * 1.01
    assert not np.array_equal(np.asarray(g), np.asarray(nvfp4_fake_quantize(x)))


def test_straight_through_gradient_and_dtype():
    x = jax.random.normal(jax.random.key(4), (4, 32)).astype(jnp.bfloat16)
    assert nvfp4_fake_quantize(x).dtype == jnp.bfloat16
    w = jax.random.normal(jax.random.key(5), (4, 32))
    grad = jax.grad(lambda x: jnp.sum(nvfp4_fake_quantize(x) * w))(x.astype(jnp.float32))
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(w))
    grad = jax.grad(lambda x: jnp.sum(mxfp4_fake_quantize(x) * w))(x.astype(jnp.float32))
    np.testing.assert_array_equal(np.asarray(grad), np.asarray(w))


def test_mxfp4_power_of_two_scale():
    # amax 7 -> floor(log2 7) = 2 -> scale 2^0: 7 saturates to 6, 2.5 ties to 2.
    x = jnp.array([7.0, 2.5, -0.3] + [0.0] * 29)
    q = np.asarray(mxfp4_fake_quantize(x))
    np.testing.assert_array_equal(q[:3], [6.0, 2.0, -0.5])
    # amax 0.1 -> floor(log2 0.1) = -4 -> scale 2^-6; 0.1 * 64 = 6.4 -> 6 -> 0.09375.
    y = jnp.array([0.1] + [0.0] * 31)
    assert float(mxfp4_fake_quantize(y)[0]) == 6 * 2.0**-6


def test_kernel_form_of_block_maxima_matches_the_reshape_form():
    x = jax.random.normal(jax.random.key(6), (8, 64)) * jnp.exp(jnp.linspace(-9.0, 3.0, 64))
    f = jax.jit(nvfp4_last_axis, static_argnames=("reshape_free",))
    np.testing.assert_array_equal(
        np.asarray(f(x, reshape_free=True)), np.asarray(f(x, reshape_free=False))
    )
