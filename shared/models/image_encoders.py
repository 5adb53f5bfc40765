"""Small image encoders for 28x28 and 32x32 inputs: a CNN and a ViT, each mapping
images `x: [b, H, W, C]` to features `[b, dim]`, and exposing every layer's output by name
(`layer_features`) for the per-layer analyses of merging papers (cross-task linearity).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from shared.models.transformer import EncoderBlock


class ConvEncoder(nnx.Module):
    """3x3 convolutions, stride 2 after the first (each halves the map), ReLU; the last map is
    flattened and projected linearly to `dim` (flattening keeps where a feature sits, which a
    corner trigger or a digit's position needs; average pooling would discard it)."""

    def __init__(
        self,
        image_size: int,
        channels: int = 1,
        widths: Sequence[int] = (16, 32),
        dim: int = 64,
        *,
        rngs: nnx.Rngs,
    ):
        if not widths:
            raise ValueError("widths must name at least one convolution")
        ins = (channels, *widths[:-1])
        self.convs = nnx.List(
            [
                nnx.Conv(a, b, (3, 3), strides=1 if i == 0 else 2, rngs=rngs)
                for i, (a, b) in enumerate(zip(ins, widths))
            ]
        )
        side = image_size
        for _ in widths[1:]:
            side = -(-side // 2)  # SAME padding with stride 2: ceil
        self.proj = nnx.Linear(side * side * widths[-1], dim, rngs=rngs)
        self.image_size, self.channels, self.dim = image_size, channels, dim

    def layer_features(self, x: jax.Array) -> dict[str, jax.Array]:
        """x: [b, H, W, C] -> {"conv0": [b, H, W, w0], ..., "proj": [b, dim]} in order."""
        if x.shape[1:] != (self.image_size, self.image_size, self.channels):
            raise ValueError(
                f"ConvEncoder built for [{self.image_size}, {self.image_size}, {self.channels}] "
                f"images got {x.shape[1:]}"
            )
        out = {}
        for i, conv in enumerate(self.convs):
            x = nnx.relu(conv(x))
            out[f"conv{i}"] = x
        out["proj"] = self.proj(x.reshape(x.shape[0], -1))
        return out

    def __call__(self, x: jax.Array) -> jax.Array:
        """x: [b, H, W, C] -> [b, dim]."""
        return self.layer_features(x)["proj"]


class ViTEncoder(nnx.Module):
    """Patch embedding + learned positions + a [CLS] token, pre-LN blocks (shared/models), a
    final LayerNorm; the feature is the [CLS] output projected to `dim` (CLIP's image tower)."""

    def __init__(
        self,
        image_size: int,
        channels: int = 1,
        patch: int = 4,
        dim: int = 64,
        depth: int = 2,
        heads: int = 4,
        width: int | None = None,  # token width (default: dim)
        *,
        rngs: nnx.Rngs,
    ):
        if image_size % patch:
            raise ValueError(f"image_size={image_size} is not a multiple of patch={patch}")
        width = width or dim
        n = (image_size // patch) ** 2
        self.embed = nnx.Linear(patch * patch * channels, width, rngs=rngs)
        self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (n + 1, width)))
        self.cls = nnx.Param(jnp.zeros((1, 1, width)))
        self.blocks = nnx.List(
            [EncoderBlock(width, heads, 4 * width, rngs=rngs) for _ in range(depth)]
        )
        self.norm = nnx.LayerNorm(width, rngs=rngs)
        self.proj = nnx.Linear(width, dim, use_bias=False, rngs=rngs)
        self.image_size, self.channels, self.patch, self.dim = image_size, channels, patch, dim

    def patches(self, x: jax.Array) -> jax.Array:
        """x: [b, H, W, C] -> [b, (H/p)(W/p), p*p*C], row-major over the patch grid."""
        b, h, w, c = x.shape
        if (h, w, c) != (self.image_size, self.image_size, self.channels):
            raise ValueError(
                f"ViTEncoder built for [{self.image_size}, {self.image_size}, {self.channels}] "
                f"images got {x.shape[1:]}"
            )
        p = self.patch
        x = x.reshape(b, h // p, p, w // p, p, c).transpose(0, 1, 3, 2, 4, 5)
        return x.reshape(b, (h // p) * (w // p), p * p * c)

    def layer_features(self, x: jax.Array) -> dict[str, jax.Array]:
        """x: [b, H, W, C] -> {"embed": [b, n+1, width], "block0": ..., "proj": [b, dim]}."""
        t = self.embed(self.patches(x))
        t = jnp.concatenate([jnp.broadcast_to(self.cls.value, (t.shape[0], 1, t.shape[2])), t], 1)
        t = t + self.pos.value
        out = {"embed": t}
        for i, block in enumerate(self.blocks):
            t = block(t)
            out[f"block{i}"] = t
        out["proj"] = self.proj(self.norm(t[:, 0]))
        return out

    def __call__(self, x: jax.Array) -> jax.Array:
        """x: [b, H, W, C] -> [b, dim]."""
        return self.layer_features(x)["proj"]


def image_encoder(
    kind: str, image_size: int, channels: int, dim: int, *, rngs: nnx.Rngs, **kwargs
) -> ConvEncoder | ViTEncoder:
    """`kind` "cnn" or "vit"; kwargs go to the encoder (widths; patch, depth, heads, width)."""
    if kind == "cnn":
        return ConvEncoder(image_size, channels, dim=dim, rngs=rngs, **kwargs)
    if kind == "vit":
        return ViTEncoder(image_size, channels, dim=dim, rngs=rngs, **kwargs)
    raise ValueError(f"encoder kind {kind!r} is not 'cnn' or 'vit'")
