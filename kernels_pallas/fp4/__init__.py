"""FP4 fake quantization (NVFP4 and MXFP4) with straight-through gradients.

`nvfp4_fake_quantize(x)` returns x rounded to NVFP4 (E2M1 elements, E4M3 scale per 16-element
block along `axis`) in x's dtype; its gradient is the identity (straight-through estimator).
The elementwise building blocks live in `reference.py` and are reused inside Pallas kernels.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from kernels_pallas.fp4.reference import (
    E2M1_MAX,
    E4M3_MAX,
    MXFP4_BLOCK,
    NVFP4_BLOCK,
    e2m1_round,
    e2m1_round_scaled,
    e8m0_from_exponent,
    mxfp4_last_axis,
    nvfp4_block_scale,
    nvfp4_last_axis,
)

__all__ = [
    "E2M1_MAX",
    "E4M3_MAX",
    "MXFP4_BLOCK",
    "NVFP4_BLOCK",
    "e2m1_round",
    "e2m1_round_scaled",
    "e8m0_from_exponent",
    "mxfp4_fake_quantize",
    "nvfp4_block_scale",
    "nvfp4_fake_quantize",
]


def _check_axis(x: jax.Array, axis: int, block: int, name: str) -> int:
    axis = axis % x.ndim
    if x.shape[axis] % block:
        raise ValueError(
            f"{name}: axis {axis} has size {x.shape[axis]}, not a multiple of block={block}; "
            "pad the array or choose an axis whose size the block divides."
        )
    return axis


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _fake_quantize_impl(x: jax.Array, kind: str, block: int, axis: int, global_scale: bool):
    xm = jnp.moveaxis(x, axis, -1)
    if kind == "nvfp4":
        q = nvfp4_last_axis(xm, block, global_scale)
    else:
        q = mxfp4_last_axis(xm, block)
    return jnp.moveaxis(q, -1, axis).astype(x.dtype)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4))
def _fake_quantize(x: jax.Array, kind: str, block: int, axis: int, global_scale: bool) -> jax.Array:
    return _fake_quantize_impl(x, kind, block, axis, global_scale)


@_fake_quantize.defjvp
def _fake_quantize_jvp(kind, block, axis, global_scale, primals, tangents):
    # Straight-through estimator: d fq(x) / dx := identity.
    return _fake_quantize(primals[0], kind, block, axis, global_scale), tangents[0]


def nvfp4_fake_quantize(
    x: jax.Array, *, block: int = NVFP4_BLOCK, axis: int = -1, global_scale: bool = False
) -> jax.Array:
    """NVFP4 fake quantization of x along `axis` (blocks of `block`), straight-through gradient.

    global_scale=True adds the per-tensor second level s_enc = 6*448/amax(x) (pass one tile to
    get the per-tile scale of the official kernels). Output dtype = x.dtype.
    """
    axis = _check_axis(x, axis, block, "nvfp4_fake_quantize")
    return _fake_quantize(x, "nvfp4", block, axis, global_scale)


def mxfp4_fake_quantize(x: jax.Array, *, axis: int = -1) -> jax.Array:
    """MXFP4 fake quantization (blocks of 32, E8M0 power-of-two scale), straight-through."""
    axis = _check_axis(x, axis, MXFP4_BLOCK, "mxfp4_fake_quantize")
    return _fake_quantize(x, "mxfp4", MXFP4_BLOCK, axis, False)
