"""VAR's multi-scale residual quantizer, after the official code (`FoundationVision/VAR`,
`models/quant.py`, read for semantics only), on NHWC features f [b, H, W, C]:

    f_hat = 0; r = f
    for k, p_k in enumerate(patch_nums):
        z_k = argmin_v |area_down(r, p_k) - e_v|^2          (the last scale, p_K = H, is not pooled)
        h_k = phi_{k/(K-1)}(bicubic_up(e[z_k], H)); f_hat += h_k; r -= h_k
    phi(h) = (1 - 0.5) h + 0.5 conv3x3(h): 4 instances shared across the scales, the one whose
        tick (linspace(1/12, 11/12, 4)) is nearest to k/(K-1)
    vq_loss = mean_k [beta |sg(f_hat_k) - f|^2 + |f_hat_k - sg(f)|^2], beta = 0.25
    output f + sg(f_hat - f) (straight-through)
`teacher_inputs` builds the transformer's input of scale k >= 1 from the ground-truth tokens of
scales < k: area_down(f_hat_{<k}, p_k), the cumulative sum, not scale k-1's tokens alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.var_sr.resize import resize


class Phi(nnx.Module):
    """The partial residual convolution: (1 - ratio) h + ratio conv3x3(h)."""

    def __init__(self, dim: int, ratio: float = 0.5, *, rngs: nnx.Rngs):
        self.conv = nnx.Conv(dim, dim, (3, 3), padding="SAME", rngs=rngs)
        self.ratio = ratio

    def __call__(self, h: jax.Array) -> jax.Array:
        return (1 - self.ratio) * h + self.ratio * self.conv(h)


def phi_index(k: int, num_scales: int, num_phi: int = 4) -> int:
    """Which shared phi scale k uses: the tick nearest to k / (K - 1)."""
    if num_phi == 4:
        ticks = np.linspace(1 / 3 / num_phi, 1 - 1 / 3 / num_phi, num_phi)
    else:
        ticks = np.linspace(1 / 2 / num_phi, 1 - 1 / 2 / num_phi, num_phi)
    at = k / (num_scales - 1) if num_scales > 1 else 0.0
    return int(np.argmin(np.abs(ticks - at)))


class MultiScaleRQ(nnx.Module):
    def __init__(
        self,
        dim: int,
        vocab: int,
        patch_nums: Sequence[int],
        beta: float = 0.25,
        quant_resi: float = 0.5,
        num_phi: int = 4,
        *,
        rngs: nnx.Rngs,
    ):
        if list(patch_nums) != sorted(set(patch_nums)):
            raise ValueError(f"patch_nums={tuple(patch_nums)} must increase strictly")
        bound = 1.0 / vocab
        self.codebook = nnx.Param(
            jax.random.uniform(rngs.params(), (vocab, dim), minval=-bound, maxval=bound)
        )
        self.phis = nnx.List([Phi(dim, quant_resi, rngs=rngs) for _ in range(num_phi)])
        self.patch_nums, self.beta, self.num_phi = tuple(patch_nums), beta, num_phi

    def _phi(self, k: int, h: jax.Array) -> jax.Array:
        return self.phis[phi_index(k, len(self.patch_nums), self.num_phi)](h)

    def _up(self, codes: jax.Array, side: int) -> jax.Array:
        """Token ids [b, p, p] -> phi-free upsampled embeddings [b, side, side, C]."""
        return resize(self.codebook.value[codes], side, side, "bicubic")

    def __call__(self, f: jax.Array, bypass: bool = False):
        """f [b, H, W, C] -> (f + sg(f_hat - f), codes per scale [b, p_k, p_k], vq_loss,
        [f_hat after scale k for every k]), over the scales p_k <= H (H must be one of them: a
        smaller image is tokenized by the first scales, with the same phi per scale).
        `bypass` (tests): phi = identity and the pooled residual instead of its nearest code."""
        side = f.shape[1]
        scales = tuple(p for p in self.patch_nums if p <= side)
        if not scales or scales[-1] != side or f.shape[2] != side:
            raise ValueError(f"features {f.shape[1:3]} must be square with a side in "
                             f"patch_nums={self.patch_nums}")  # fmt: skip
        f_hat, rest = jnp.zeros_like(f), f
        codes, partial = [], []
        loss = jnp.zeros((), f.dtype)
        e = self.codebook.value
        for k, p in enumerate(scales):
            pooled = rest if p == side else resize(rest, p, p, "area")
            d = jnp.sum(pooled**2, -1, keepdims=True) - 2 * pooled @ e.T + jnp.sum(e**2, -1)
            z = jnp.argmin(d, -1)  # [b, p, p]
            codes.append(z)
            if bypass:
                h = resize(pooled, side, side, "bicubic")
            else:
                h = self._phi(k, self._up(z, side))
            f_hat = f_hat + h
            rest = rest - h
            partial.append(f_hat)
            loss = loss + self.beta * jnp.mean((jax.lax.stop_gradient(f_hat) - f) ** 2)
            loss = loss + jnp.mean((f_hat - jax.lax.stop_gradient(f)) ** 2)
        out = f + jax.lax.stop_gradient(f_hat - f)
        return out, codes, loss / len(scales), partial

    def decode_codes(self, codes: Sequence[jax.Array], side: int) -> list[jax.Array]:
        """Token ids of scales 0..k -> [f_hat after each of them] (the prefix decodes)."""
        f_hat, out = 0.0, []
        for k, z in enumerate(codes):
            f_hat = f_hat + self._phi(k, self._up(z, side))
            out.append(f_hat)
        return out

    def teacher_inputs(self, codes: Sequence[jax.Array], side: int) -> list[jax.Array]:
        """Inputs of scales 1..K-1 from ground-truth tokens: area_down(f_hat_{<k}, p_k)."""
        prefixes = self.decode_codes(codes[:-1], side)
        return [resize(fh, p, p, "area") for fh, p in zip(prefixes, self.patch_nums[1:])]


def block_causal_mask(patch_nums: Sequence[int]) -> np.ndarray:
    """[L, L] bool, L = sum p_k^2: token i may attend to token j iff scale(i) >= scale(j)."""
    scale = np.concatenate([np.full(p * p, k) for k, p in enumerate(patch_nums)])
    return scale[:, None] >= scale[None, :]
