"""Image quality metrics for super-resolution: PSNR and SSIM, in jax, on NHWC floats.

Conventions (those of `dm_pix`, which the VAR-SR spec names, and of scikit-image's
`structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False)`):
- PSNR = 10 log10(data_range^2 / MSE) per image; identical images give +inf (no NaN, no warning).
- SSIM: an 11-tap Gaussian window (sigma 1.5), k1 = 0.01, k2 = 0.03, statistics over the valid
  window positions only (no padding), averaged over positions and channels per image.
- Super-resolution papers often score the luma channel with a border crop equal to the scale
  factor: `rgb_to_y` (ITU-R BT.601, the MATLAB `rgb2ycbcr` luma) and `border` do that.
Inputs are [..., H, W, C] (a leading batch is optional); results have the leading shape.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def rgb_to_y(x: jax.Array) -> jax.Array:
    """[..., H, W, 3] RGB in [0, 1] -> [..., H, W, 1] luma in [16/255, 235/255] (BT.601)."""
    x = jnp.asarray(x)
    if x.shape[-1] != 3:
        raise ValueError(f"rgb_to_y needs 3 channels, got {x.shape[-1]}")
    w = jnp.array([65.481, 128.553, 24.966], x.dtype) / 255.0
    return (16.0 / 255.0 + x @ w)[..., None]


def _crop(x: jax.Array, border: int) -> jax.Array:
    if border < 0 or 2 * border >= min(x.shape[-3], x.shape[-2]):
        raise ValueError(f"border={border} leaves no pixel of a {x.shape[-3:-1]} image")
    return x[..., border : x.shape[-3] - border, border : x.shape[-2] - border, :] if border else x


def psnr(
    x: jax.Array, y: jax.Array, data_range: float = 1.0, border: int = 0
) -> jax.Array:
    """Peak signal-to-noise ratio in dB per image: [..., H, W, C] x 2 -> [...]."""
    if x.shape != y.shape:
        raise ValueError(f"psnr of different shapes {x.shape} and {y.shape}")
    x, y = _crop(jnp.asarray(x), border), _crop(jnp.asarray(y), border)
    mse = jnp.mean((x - y) ** 2, axis=(-3, -2, -1))
    safe = jnp.where(mse > 0, mse, 1.0)
    return jnp.where(mse > 0, 10 * jnp.log10(data_range**2 / safe), jnp.inf)


def gaussian_window(size: int = 11, sigma: float = 1.5) -> np.ndarray:
    """The normalized 1-D Gaussian taps [size] (the 2-D window is their outer product)."""
    t = np.arange(size) - (size - 1) / 2
    g = np.exp(-(t**2) / (2 * sigma**2))
    return g / g.sum()  # float64; cast to the images' dtype where used


def _filter(x: jax.Array, taps: jax.Array) -> jax.Array:
    """Separable valid correlation of [n, H, W, C] with the taps along H, then W."""
    k = taps.shape[0]
    h = sum(taps[i] * x[:, i : x.shape[1] - k + 1 + i] for i in range(k))
    return sum(taps[i] * h[:, :, i : h.shape[2] - k + 1 + i] for i in range(k))


def ssim(
    x: jax.Array,
    y: jax.Array,
    data_range: float = 1.0,
    border: int = 0,
    size: int = 11,
    sigma: float = 1.5,
    k1: float = 0.01,
    k2: float = 0.03,
) -> jax.Array:
    """Mean structural similarity per image: [..., H, W, C] x 2 -> [...]."""
    if x.shape != y.shape:
        raise ValueError(f"ssim of different shapes {x.shape} and {y.shape}")
    x, y = _crop(jnp.asarray(x), border), _crop(jnp.asarray(y), border)
    if min(x.shape[-3], x.shape[-2]) < size:
        raise ValueError(f"images of {x.shape[-3:-1]} are smaller than the {size}-tap window")
    lead = x.shape[:-3]
    x, y = x.reshape(-1, *x.shape[-3:]), y.reshape(-1, *y.shape[-3:])
    taps = jnp.asarray(gaussian_window(size, sigma), x.dtype)
    mx, my = _filter(x, taps), _filter(y, taps)
    vx = _filter(x * x, taps) - mx * mx
    vy = _filter(y * y, taps) - my * my
    cxy = _filter(x * y, taps) - mx * my
    c1, c2 = (k1 * data_range) ** 2, (k2 * data_range) ** 2
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean(axis=(1, 2, 3)).reshape(lead)
