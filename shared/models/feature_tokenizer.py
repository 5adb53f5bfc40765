"""FT-Transformer-style feature tokenizer (Gorishniy et al., 2021), with [CLS]/[REG] tokens.

Numerical feature j -> W_j * x_j + b_j; categorical feature j -> E_j[x_j] + b_j. `n_cls` extra
tokens W_cls (no bias) are prepended, as T-JEPA's [REG] tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx


class FeatureTokenizer(nnx.Module):
    def __init__(
        self,
        n_num: int,
        cat_cardinalities: Sequence[int],
        dim: int,
        *,
        rngs: nnx.Rngs,
        n_cls: int = 0,
    ):
        init = nnx.initializers.normal(1.0 / np.sqrt(dim))
        self.n_num, self.n_cat, self.n_cls = n_num, len(cat_cardinalities), n_cls
        self.num_weight = nnx.Param(init(rngs.params(), (n_num, dim)))
        self.num_bias = nnx.Param(init(rngs.params(), (n_num, dim)))
        cards = np.asarray(cat_cardinalities, np.int32)
        # Offsets of each column's rows in the shared embedding table (static, not a parameter).
        self.cat_offsets = tuple(int(o) for o in np.cumsum(cards) - cards)
        self.cat_embed = nnx.Param(init(rngs.params(), (int(cards.sum()), dim)))
        self.cat_bias = nnx.Param(init(rngs.params(), (self.n_cat, dim)))
        self.cls = nnx.Param(init(rngs.params(), (n_cls, dim)))

    @property
    def num_tokens(self) -> int:
        return self.n_cls + self.n_num + self.n_cat

    def __call__(self, x_num: jax.Array, x_cat: jax.Array) -> jax.Array:
        """x_num: [B, Dn] float, x_cat: [B, Dc] int -> tokens [B, n_cls + Dn + Dc, dim]."""
        b = x_num.shape[0]
        num = x_num[..., None] * self.num_weight[...] + self.num_bias[...]
        cat = (
            self.cat_embed[...][x_cat + jnp.asarray(self.cat_offsets, jnp.int32)]
            + self.cat_bias[...]
        )
        cls = jnp.broadcast_to(self.cls[...], (b, *self.cls.shape))
        return jnp.concatenate([cls, num, cat], axis=1)
