"""Transformer encoder blocks with a pluggable attention function."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from flax import nnx

from shared.models.attention import AttentionFn, dot_product_attention, key_padding_mask
from shared.models.layers import dropout, split_key


def combine_masks(a: jax.Array | None, b: jax.Array | None) -> jax.Array | None:
    """The AND of two broadcastable boolean attention masks; None stands for "attend to all"."""
    if a is None or b is None:
        return b if a is None else a
    return a & b


class MultiHeadAttention(nnx.Module):
    def __init__(
        self,
        dim: int,
        num_heads: int,
        *,
        rngs: nnx.Rngs,
        attention_fn: AttentionFn = dot_product_attention,
    ):
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.qkv = nnx.Linear(dim, 3 * dim, rngs=rngs)
        self.out = nnx.Linear(dim, dim, rngs=rngs)
        self.attention_fn = attention_fn

    def __call__(self, x: jax.Array, mask: jax.Array | None = None) -> jax.Array:
        """x: [B, S, D]; mask broadcastable to [B, N, S, S] -> [B, S, D]."""
        b, s, d = x.shape
        q, k, v = jnp.split(
            self.qkv(x).reshape(b, s, 3 * self.num_heads, d // self.num_heads), 3, 2
        )
        return self.out(self.attention_fn(q, k, v, mask).reshape(b, s, d))


class EncoderBlock(nnx.Module):
    """Self-attention + feed-forward with residuals.

    `norm_first=True` is the pre-LN block (the default for new models); `False` is the post-LN
    block of `torch.nn.TransformerEncoderLayer`'s default, which T-JEPA uses.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        ff_dim: int,
        *,
        rngs: nnx.Rngs,
        dropout_rate: float = 0.0,
        norm_first: bool = True,
        activation: Callable[[jax.Array], jax.Array] = nnx.gelu,
        attention_fn: AttentionFn = dot_product_attention,
        norm_eps: float = 1e-6,  # nnx.LayerNorm's default; BERT checkpoints use 1e-12
    ):
        self.attn = MultiHeadAttention(dim, num_heads, rngs=rngs, attention_fn=attention_fn)
        self.ff1 = nnx.Linear(dim, ff_dim, rngs=rngs)
        self.ff2 = nnx.Linear(ff_dim, dim, rngs=rngs)
        self.norm1 = nnx.LayerNorm(dim, epsilon=norm_eps, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, epsilon=norm_eps, rngs=rngs)
        self.dropout_rate = dropout_rate
        self.norm_first = norm_first
        self.activation = activation

    def _ff(self, x: jax.Array, key: jax.Array | None) -> jax.Array:
        k1, k2 = split_key(key, 2)
        return dropout(
            self.ff2(dropout(self.activation(self.ff1(x)), self.dropout_rate, k1)),
            self.dropout_rate,
            k2,
        )

    def __call__(
        self,
        x: jax.Array,
        *,
        valid: jax.Array | None = None,
        mask: jax.Array | None = None,
        key: jax.Array | None = None,
    ) -> jax.Array:
        """x: [B, S, D]; valid: [B, S] bool marks real (non-padding) tokens; mask: an extra
        attention mask broadcastable to [B, N, S, S] (True = attend), ANDed with `valid`'s."""
        mask = combine_masks(None if valid is None else key_padding_mask(valid), mask)
        k1, k2 = split_key(key, 2)
        if self.norm_first:
            x = x + dropout(self.attn(self.norm1(x), mask), self.dropout_rate, k1)
            return x + self._ff(self.norm2(x), k2)
        x = self.norm1(x + dropout(self.attn(x, mask), self.dropout_rate, k1))
        return self.norm2(x + self._ff(x, k2))


class TransformerEncoder(nnx.Module):
    """A stack of `EncoderBlock`s (no final norm: callers add the head they need)."""

    def __init__(
        self,
        num_layers: int,
        dim: int,
        num_heads: int,
        ff_dim: int,
        *,
        rngs: nnx.Rngs,
        **block_kwargs,
    ):
        self.blocks = nnx.List(
            [
                EncoderBlock(dim, num_heads, ff_dim, rngs=rngs, **block_kwargs)
                for _ in range(num_layers)
            ]
        )

    def __call__(
        self,
        x: jax.Array,
        *,
        valid: jax.Array | None = None,
        mask: jax.Array | None = None,
        key: jax.Array | None = None,
    ) -> jax.Array:
        """x: [B, S, D]; valid [B, S] and mask [B|1, N|1, S, S] as in `EncoderBlock`."""
        # `mask` is passed only when given: blocks swapped in by projects (var_jepa's
        # PostLNBlock) take valid and key alone.
        extra = {} if mask is None else {"mask": mask}
        for block, k in zip(self.blocks, split_key(key, len(self.blocks))):
            x = block(x, valid=valid, key=k, **extra)
        return x
