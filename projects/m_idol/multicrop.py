"""DINO's multi-crop views as pure jax functions of (key, images): G global and L local random
resized crops, each flipped and colour-jittered (flip and jitter from shared/data/augment.py).

Scale ranges (fractions of the image area): DINO uses (0.4, 1) and (0.05, 0.4) at 224 px. At
32 px a 0.05 local crop is a 7 x 7-pixel region, smaller than one lesion, so the cpu configs use
(0.5, 1) and (0.2, 0.5) (chosen once from the image size, before any run; config fields).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveInt
from shared.data.augment import color_jitter, random_flip


@dataclasses.dataclass(frozen=True)
class CropConfig:
    global_views: PositiveInt = 2  # G: teacher and student see these
    local_views: NonNegativeInt = 4  # L: the student only
    local_size: PositiveInt = 16  # output side of a local view
    global_scale: tuple[Fraction, Fraction] = (0.5, 1.0)  # area fraction range
    local_scale: tuple[Fraction, Fraction] = (0.2, 0.5)
    jitter: NonNegativeFloat = 0.2  # brightness / contrast strength (augment.color_jitter)
    flip: bool = True  # horizontal flips (none of the fine labels is left-right sensitive)


def random_resized_crop(
    key: jax.Array, x: jax.Array, size: int, scale: tuple[float, float]
) -> jax.Array:
    """x: [b, H, W, C] -> [b, size, size, C]: per image a box of area fraction ~ U(scale) and
    aspect ratio log-uniform in [3/4, 4/3] (clipped to the image), placed uniformly, resampled
    bilinearly (pixel centres map to pixel centres)."""
    b, h, w, c = x.shape
    ka, kr, ky, kx = jax.random.split(key, 4)
    area = jax.random.uniform(ka, (b,), minval=scale[0], maxval=scale[1]) * h * w
    ratio = jnp.exp(jax.random.uniform(kr, (b,), minval=jnp.log(3 / 4), maxval=jnp.log(4 / 3)))
    ch = jnp.clip(jnp.sqrt(area / ratio), 1.0, h)
    cw = jnp.clip(jnp.sqrt(area * ratio), 1.0, w)
    top = jax.random.uniform(ky, (b,)) * (h - ch)
    left = jax.random.uniform(kx, (b,)) * (w - cw)
    t = (jnp.arange(size) + 0.5) / size  # [size] positions inside the box, in (0, 1)
    wy = _interpolation(top[:, None] + t[None] * ch[:, None] - 0.5, h)  # [b, size, H]
    wx = _interpolation(left[:, None] + t[None] * cw[:, None] - 0.5, w)  # [b, size, W]
    return jnp.einsum("boh,bhwc,bpw->bopc", wy, x, wx)


def _interpolation(coord: jax.Array, n: int) -> jax.Array:
    """coord [b, size] source coordinates -> [b, size, n] linear-interpolation weights (two
    neighbours, edges clamped). Bilinear resampling on a separable grid is wy @ image @ wx^T:
    small dense products that compile in a fraction of a second, unlike a gather per pixel."""
    coord = jnp.clip(coord, 0.0, n - 1.0)
    lo = jnp.floor(coord)
    frac = coord - lo
    hi = jnp.minimum(lo + 1, n - 1)
    return (1 - frac)[..., None] * jax.nn.one_hot(lo, n) + frac[..., None] * jax.nn.one_hot(hi, n)


def _finish(key: jax.Array, v: jax.Array, cfg: CropConfig) -> jax.Array:
    kf, kj = jax.random.split(key)
    if cfg.flip:
        v = random_flip(kf, v)
    if cfg.jitter:
        v = color_jitter(kj, v, cfg.jitter, cfg.jitter)
    return v


def multicrop(key: jax.Array, x: jax.Array, cfg: CropConfig) -> tuple[jax.Array, jax.Array]:
    """x: [b, s, s, C] in [0, 1] -> (globals [G, b, s, s, C], locals [L, b, ls, ls, C])."""
    b, c = x.shape[0], x.shape[-1]
    kg, kl = jax.random.split(key)

    def views(k, n, size, scale):  # n views of every image at once: [n, b, size, size, C]
        if n == 0:
            return jnp.zeros((0, b, size, size, c), x.dtype)
        kc, kr = jax.random.split(k)
        tiled = jnp.broadcast_to(x, (n, *x.shape)).reshape(n * b, *x.shape[1:])
        out = _finish(kr, random_resized_crop(kc, tiled, size, scale), cfg)
        return out.reshape(n, b, size, size, c)

    # global views keep the image's side (the encoder's native size)
    return (views(kg, cfg.global_views, x.shape[1], cfg.global_scale),
            views(kl, cfg.local_views, cfg.local_size, cfg.local_scale))  # fmt: skip
