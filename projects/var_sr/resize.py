"""The two resamplings of VAR's quantizer as exact linear maps (one matrix per axis), matching
PyTorch's `F.interpolate` that the official code calls (`FoundationVision/VAR`, read for
semantics only):

- "area" (down): adaptive average pooling; output cell i averages input cells
  floor(i n_in / n_out) .. ceil((i + 1) n_in / n_out) - 1 (bins overlap when n_out does not
  divide n_in, e.g. 16 -> 13).
- "bicubic" (up), align_corners=False: source coordinate (o + 0.5) n_in / n_out - 0.5, Keys'
  cubic kernel with a = -0.75 (PyTorch's; jax.image.resize's "cubic" uses a = -0.5), indices
  clamped at the border. n_in = n_out is the identity; n_in = 1 is a constant.
Images are NHWC: `resize(x, n_out_h, n_out_w, kind)`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np


@functools.cache
def area_matrix(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, n_in] adaptive-average-pooling weights (rows sum to 1)."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def _cubic(t: np.ndarray, a: float) -> np.ndarray:
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0.0))


@functools.cache
def bicubic_matrix(n_in: int, n_out: int, a: float = -0.75) -> np.ndarray:
    """[n_out, n_in] bicubic interpolation weights (align_corners=False, clamped border)."""
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        src = (o + 0.5) * n_in / n_out - 0.5
        base = int(np.floor(src))
        for i in range(base - 1, base + 3):
            m[o, min(max(i, 0), n_in - 1)] += _cubic(np.array(src - i), a)
    return m


def resize(x: jax.Array, n_h: int, n_w: int, kind: str) -> jax.Array:
    """x [b, H, W, C] -> [b, n_h, n_w, C] by "area" or "bicubic"."""
    make = {"area": area_matrix, "bicubic": bicubic_matrix}[kind]
    mh = jnp.asarray(make(x.shape[1], n_h), x.dtype)
    mw = jnp.asarray(make(x.shape[2], n_w), x.dtype)
    return jnp.einsum("oh,bhwc,pw->bopc", mh, x, mw)
