"""T-JEPA's encoder and predictor in Flax NNX.

From the official code (jose-melo/t-jepa, src/encoder.py, src/predictors.py):
- `TabularTransformer` = post-LN transformer layers (ReLU FFN, dropout also on the attention
  probabilities, LayerNorm eps 1e-5; tjepa_blocks.py), then
  Dropout -> LayerNorm -> Linear(H, H) -> Dropout -> LayerNorm.
- `Encoder`: FT-Transformer tokenizer with [REG] tokens prepended, sinusoidal positions with
  base 100 added to the whole token sequence, then the tokens at the given positions are
  gathered and encoded.
- `Predictor` (I-JEPA style): Linear(H -> pred_dim) on context tokens + fixed 1-D sin-cos
  position table (I-JEPA's layout: sin half, then cos half); a learned mask token + position at
  every target slot; the context repeated once per target set; transformer -> LayerNorm ->
  target slots -> Linear(pred_dim -> out).
Our initializers are Flax's defaults in the encoder and N(0, 0.02) (truncated) in the predictor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.var_jepa.tjepa_blocks import LN_EPS, PostLNEncoder, dropout
from shared.config import Fraction, NonNegativeInt, PositiveInt
from shared.models.feature_tokenizer import FeatureTokenizer
from shared.models.layers import sinusoidal_positions, split_key


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    hidden_dim: PositiveInt = 32  # token width H (T-JEPA jannis: 64)
    num_layers: PositiveInt = 2  # encoder layers (jannis: 16)
    num_heads: PositiveInt = 2
    ff_dim: PositiveInt = 64  # encoder feed-forward width (jannis: 64)
    dropout: Fraction = 0.002  # kept active in every layer during pretraining, as the official code
    # the predictor's (official PRED_P_DROPOUT); None: = dropout
    pred_dropout: Fraction | None = None
    pred_dim: PositiveInt = 16  # predictor width
    pred_layers: PositiveInt = 2  # (jannis: 16)
    pred_heads: PositiveInt = 4
    pred_ff_dim: PositiveInt = 256  # the official parser default
    n_cls_tokens: NonNegativeInt = 1  # T-JEPA's [REG] tokens; Var-T-JEPA uses none


class TabularTransformer(nnx.Module):
    def __init__(
        self, dim: int, num_layers: int, num_heads: int, ff_dim: int, rate: float, *, rngs: nnx.Rngs
    ):
        self.layers = PostLNEncoder(num_layers, dim, num_heads, ff_dim, rate, rngs=rngs)
        self.norm1 = nnx.LayerNorm(dim, epsilon=LN_EPS, rngs=rngs)
        self.fc = nnx.Linear(dim, dim, rngs=rngs)
        self.norm2 = nnx.LayerNorm(dim, epsilon=LN_EPS, rngs=rngs)
        self.rate = rate

    def __call__(
        self, x: jax.Array, *, valid: jax.Array | None = None, key: jax.Array | None = None
    ) -> jax.Array:
        """x: [B, S, dim]; valid: [B, S] bool (padding = False) -> [B, S, dim]."""
        k0, k1, k2 = split_key(key, 3)
        x = self.layers(x, valid=valid, key=k0)
        x = self.norm1(dropout(x, self.rate, k1))
        return self.norm2(dropout(self.fc(x), self.rate, k2))


def ijepa_positions(length: int, dim: int) -> np.ndarray:
    """[length, dim] fixed table of the official predictor (I-JEPA's get_1d_sincos_pos_embed):
    sin in the first dim/2 channels, cos in the last, frequencies 10000^(-2i/dim)."""
    table = sinusoidal_positions(length, dim)  # sin on even, cos on odd channels
    return np.concatenate([table[:, 0::2], table[:, 1::2]], axis=1)


def gather_tokens(x: jax.Array, positions: jax.Array) -> jax.Array:
    """x: [B, T, H], positions: [B, N] -> [B, N, H]."""
    return jnp.take_along_axis(x, positions[..., None], axis=1)


class Encoder(nnx.Module):
    def __init__(
        self,
        n_num: int,
        cat_cardinalities: Sequence[int],
        cfg: ModelConfig,
        n_cls: int,
        *,
        rngs: nnx.Rngs,
    ):
        self.tokenizer = FeatureTokenizer(
            n_num, cat_cardinalities, cfg.hidden_dim, rngs=rngs, n_cls=n_cls
        )
        self.body = TabularTransformer(
            cfg.hidden_dim, cfg.num_layers, cfg.num_heads, cfg.ff_dim, cfg.dropout, rngs=rngs
        )
        self.num_tokens = self.tokenizer.num_tokens
        self.dim = cfg.hidden_dim

    def __call__(
        self,
        x_num: jax.Array,
        x_cat: jax.Array,
        positions: jax.Array | None = None,
        valid: jax.Array | None = None,
        key: jax.Array | None = None,
    ) -> jax.Array:
        """Encodes the tokens at `positions` [B, N] (all T tokens when None) -> [B, N, H]."""
        pos = sinusoidal_positions(self.num_tokens, self.dim, base=100.0)
        tokens = self.tokenizer(x_num, x_cat) + pos
        if positions is not None:
            tokens = gather_tokens(tokens, positions)
        return self.body(tokens, valid=valid, key=key)


class Predictor(nnx.Module):
    def __init__(
        self, in_dim: int, out_dim: int, num_positions: int, cfg: ModelConfig, *, rngs: nnx.Rngs
    ):
        init = nnx.initializers.truncated_normal(0.02)
        self.embed = nnx.Linear(in_dim, cfg.pred_dim, kernel_init=init, rngs=rngs)
        self.mask_token = nnx.Param(init(rngs.params(), (cfg.pred_dim,)))
        rate = cfg.dropout if cfg.pred_dropout is None else cfg.pred_dropout
        self.body = TabularTransformer(
            cfg.pred_dim, cfg.pred_layers, cfg.pred_heads, cfg.pred_ff_dim, rate, rngs=rngs
        )
        self.norm = nnx.LayerNorm(cfg.pred_dim, epsilon=LN_EPS, rngs=rngs)
        self.proj = nnx.Linear(cfg.pred_dim, out_dim, kernel_init=init, rngs=rngs)
        self.num_positions = num_positions
        self.pred_dim = cfg.pred_dim

    def __call__(
        self,
        ctx: jax.Array,
        ctx_pos: jax.Array,
        ctx_valid: jax.Array,
        trgt_pos: jax.Array,
        trgt_valid: jax.Array,
        key: jax.Array | None = None,
    ) -> jax.Array:
        """ctx: [B, Nc, H] context tokens at positions ctx_pos [B, Nc] (validity [B, Nc]);
        trgt_pos: [P, B, Nt] target positions (validity [Nt]) -> predictions [P, B, Nt, out]."""
        p, b, nt = trgt_pos.shape
        table = jnp.asarray(ijepa_positions(self.num_positions, self.pred_dim))
        x = self.embed(ctx) + table[ctx_pos]
        x = jnp.broadcast_to(x[None], (p, *x.shape)).reshape(p * b, *x.shape[1:])
        m = self.mask_token[...] + table[trgt_pos.reshape(p * b, nt)]
        valid = jnp.concatenate(
            [
                jnp.broadcast_to(ctx_valid[None], (p, b, ctx.shape[1])).reshape(p * b, -1),
                jnp.broadcast_to(trgt_valid, (p * b, nt)),
            ],
            axis=1,
        )
        out = self.norm(self.body(jnp.concatenate([x, m], axis=1), valid=valid, key=key))
        return self.proj(out[:, ctx.shape[1] :]).reshape(p, b, nt, -1)


def token_positions(
    ctx: jax.Array, ctx_valid: jax.Array, trgt: jax.Array, n_cls: int, mask_includes_reg: bool
):
    """Maps mask indices to token positions in the [REG..., features...] sequence.

    mask_includes_reg=True (the official behaviour): index i is token position i, so index 0 is
    the first [REG] token. False: indices address feature tokens (position i + n_cls) and the
    [REG] tokens always join the context. Returns ctx_pos [B, Nc'], ctx_valid [B, Nc'],
    trgt_pos [P, B, Nt].
    """
    b = ctx.shape[0]
    valid = jnp.broadcast_to(ctx_valid, ctx.shape)
    if mask_includes_reg or n_cls == 0:
        return ctx, valid, trgt
    reg = jnp.broadcast_to(jnp.arange(n_cls), (b, n_cls))
    return (
        jnp.concatenate([reg, ctx + n_cls], 1),
        jnp.concatenate([jnp.ones((b, n_cls), bool), valid], 1),
        trgt + n_cls,
    )
