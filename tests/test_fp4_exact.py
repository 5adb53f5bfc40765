"""NVFP4 / MXFP4 are exact: every E2M1 tie at every E4M3 block scale, every scale tie, saturation,
underflow and every E8M0 exponent, in float32 and bfloat16, against a float64 NumPy reference."""

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from kernels_pallas.fp4 import e8m0_from_exponent, mxfp4_fake_quantize, nvfp4_fake_quantize
from kernels_pallas.fp4.reference import mxfp4_last_axis, nvfp4_last_axis

E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_TIES = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
# Every finite non-negative E4M3 value; index = bit pattern, so index parity = mantissa LSB.
E4M3 = np.arange(0x7F, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)
DTYPES = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16}


def _round_to_grid(v: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Nearest grid value to each v >= 0 (float64), ties to the even index, saturating."""
    dist = np.abs(v[..., None] - grid)
    best = dist.min(-1, keepdims=True)
    candidates = np.where(dist == best, np.arange(grid.size), grid.size)
    even = np.where(candidates % 2 == 0, candidates, grid.size).min(-1)
    idx = np.where(even < grid.size, even, candidates.min(-1))
    return grid[idx]


def nvfp4_float64(x: np.ndarray) -> np.ndarray:
    """NVFP4 (16-blocks, E4M3 scale of amax/6 clipped to 448, E2M1 elements), in float64.

    Quotients are formed in float64 from float32 operands, where no non-tie can land on a tie.
    """
    g = x.astype(np.float64).reshape(-1, 16)
    amax = np.abs(g).max(-1, keepdims=True)
    scale = _round_to_grid(np.minimum(amax / 6.0, 448.0), E4M3)
    safe = np.where(scale > 0, scale, 1.0)  # blocks whose scale underflows are flushed to zero
    q = np.sign(g) * _round_to_grid(np.abs(g) / safe, E2M1) * scale
    return np.where(scale > 0, q, 0.0).reshape(x.shape)


def mxfp4_float64(x: np.ndarray) -> np.ndarray:
    """MXFP4 (32-blocks, scale 2^(floor(log2 amax) - 2) clipped to E8M0, E2M1 elements)."""
    g = x.astype(np.float64).reshape(-1, 32)
    amax = np.abs(g).max(-1, keepdims=True)
    _, e = np.frexp(amax)  # amax = m 2^e with m in [0.5, 1): floor(log2 amax) = e - 1
    scale = np.ldexp(1.0, np.clip(e - 1 - 2, -127, 127))
    q = np.sign(g) * _round_to_grid(np.abs(g) / scale, E2M1) * scale
    return np.where(amax > 0, q, 0.0).reshape(x.shape)


def _neighbours(v: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The next representable values below and above positive v in dtype."""
    a = np.asarray(v, dtype)
    ubits = np.uint32 if dtype is np.float32 else np.uint16
    bits = a.view(ubits)
    return (bits - ubits(1)).view(dtype), (bits + ubits(1)).view(dtype)


def _nvfp4_cases(dtype) -> np.ndarray:
    """Blocks that enumerate the edge cases (each row one 16-element block)."""
    rows = []
    for s in E4M3[1:]:  # every positive block scale; amax = 6 s makes the scale exactly s
        ties = (E2M1_TIES * s).astype(dtype)
        below, above = _neighbours(ties, dtype)
        rows.append(np.concatenate([[6 * s], ties, -ties, [0.0]]))
        rows.append(np.concatenate([[6 * s], below, above, [-s / 2]]))
    for lo, hi in zip(E4M3[:-1], E4M3[1:]):  # scale ties: amax/6 on an E4M3 midpoint, and beside it
        mid = np.asarray(6 * (lo + hi) / 2, dtype)
        for amax in (mid, *_neighbours(mid, dtype)):
            rows.append(np.concatenate([[amax], E2M1_TIES * lo, -E2M1_TIES * hi, [-amax / 3]]))
    for amax in 6 * 448.0 * np.array([1.0, 1.01, 2.0, 100.0]):  # the scale clips at 448
        rows.append(np.concatenate([[amax], E2M1_TIES * 448, -E2M1_TIES * 448, [amax / 7]]))
    rows.append(np.zeros(16))
    return np.asarray(np.stack(rows), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_nvfp4_every_tie_at_every_scale(dtype):
    x = _nvfp4_cases(DTYPES[dtype])
    want = nvfp4_float64(x)
    f = jax.jit(nvfp4_last_axis, static_argnames=("reshape_free",))
    for reshape_free in (False, True):  # the reshape form and the form kernels use
        got = np.asarray(f(jnp.asarray(x), reshape_free=reshape_free), np.float64)
        bad = np.argwhere(got != want)
        assert bad.size == 0, f"{len(bad)} wrong, first {x[tuple(bad[0])]}: {got[tuple(bad[0])]}"
    # The public op in the input dtype (the output is exact in bfloat16), along another axis.
    got = np.asarray(nvfp4_fake_quantize(jnp.asarray(x.T), axis=0)).T
    assert got.dtype == np.dtype(DTYPES[dtype])
    np.testing.assert_array_equal(got.astype(np.float64), want)


def test_nvfp4_issue_case_ties_to_even():
    # amax 5.625 -> scale e4m3(0.9375) = 0.9375; 2.34375 is exactly 2.5 units: ties to 2 (1.875).
    x = np.zeros(16, np.float32)
    x[:2] = [5.625, 2.34375]
    for dtype in (jnp.float32, jnp.bfloat16):
        got = np.asarray(nvfp4_fake_quantize(jnp.asarray(x, dtype)), np.float64)
        assert got[0] == 5.625 and got[1] == 1.875


@pytest.mark.parametrize("dtype", DTYPES)
def test_nvfp4_random_values(dtype):
    key1, key2 = jax.random.split(jax.random.key(0))
    x = jax.random.normal(key1, (4096, 64)) * jnp.exp(
        jax.random.uniform(key2, (4096, 1), minval=-9)
    )
    x = np.asarray(x.astype(DTYPES[dtype]))
    got = np.asarray(nvfp4_fake_quantize(jnp.asarray(x)), np.float64)
    np.testing.assert_array_equal(got, nvfp4_float64(x))


def test_e8m0_scale_is_an_exact_power_of_two():
    e = np.arange(-127, 128)
    got = np.asarray(jax.jit(e8m0_from_exponent)(jnp.asarray(e)), np.float64)
    np.testing.assert_array_equal(got, np.ldexp(1.0, e))
    assert float(jax.jit(e8m0_from_exponent)(jnp.int32(15))) == 32768.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_mxfp4_every_tie_at_many_exponents(dtype):
    dt, rows = DTYPES[dtype], []
    for e in range(-100, 120, 3):  # within bfloat16's range, far from float32 subnormals
        s = 2.0**e
        ties = (E2M1_TIES * s).astype(dt)
        below, above = _neighbours(ties, dt)
        rows.append(np.concatenate([[7 * s], ties, -ties, below, above, [0.0, -s, 6 * s]]))
    x = np.asarray(np.stack(rows), dt)
    want = mxfp4_float64(x)
    got = np.asarray(jax.jit(mxfp4_last_axis)(jnp.asarray(x)), np.float64)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(mxfp4_fake_quantize(jnp.asarray(x)), np.float64), want)
