"""A BERT encoder (inference) built from the shared post-LN `EncoderBlock`, plus sentence pooling.

Sizes default to all-MiniLM-L6-v2 (`shared.models.pretrained.minilm` loads its weights). BERT's
layer = attention -> add -> LayerNorm -> FFN(exact GELU) -> add -> LayerNorm, which is
`EncoderBlock(norm_first=False)`; the embedding sum gets its own LayerNorm before the first block.
No dropout: this module is for encoding with pretrained weights.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from flax import nnx

from shared.models.transformer import TransformerEncoder


@dataclasses.dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522  # WordPiece vocabulary (uncased BERT)
    dim: int = 384  # hidden size D
    num_layers: int = 6  # encoder blocks
    num_heads: int = 12  # attention heads (head_dim = dim / num_heads = 32)
    ffn_dim: int = 1536  # intermediate size of the feed-forward layer (4 * dim)
    max_positions: int = 512  # learned absolute positions: the longest input
    type_vocab_size: int = 2  # token types (segment A / B)
    norm_eps: float = 1e-12  # LayerNorm epsilon of every norm (HF `layer_norm_eps`)
    # HF's `hidden_act="gelu"` is the exact erf GELU; nnx.gelu / jax.nn.gelu default to tanh.
    gelu_approximate: bool = False


# Module-level (not a fresh `functools.partial` per model) so that two models of one config have
# equal graphdefs and share jit caches keyed on them (see pretrained.minilm.SentenceEncoder).
GELU = {
    False: functools.partial(jax.nn.gelu, approximate=False),
    True: functools.partial(jax.nn.gelu, approximate=True),
}


class Bert(nnx.Module):
    """Token + position + type embeddings, LayerNorm, then `num_layers` post-LN blocks."""

    def __init__(self, cfg: BertConfig, *, rngs: nnx.Rngs):
        self.cfg = cfg
        self.word_embed = nnx.Embed(cfg.vocab_size, cfg.dim, rngs=rngs)
        self.position_embed = nnx.Embed(cfg.max_positions, cfg.dim, rngs=rngs)
        self.type_embed = nnx.Embed(cfg.type_vocab_size, cfg.dim, rngs=rngs)
        self.embed_norm = nnx.LayerNorm(cfg.dim, epsilon=cfg.norm_eps, rngs=rngs)
        self.encoder = TransformerEncoder(
            cfg.num_layers,
            cfg.dim,
            cfg.num_heads,
            cfg.ffn_dim,
            rngs=rngs,
            norm_first=False,
            activation=GELU[cfg.gelu_approximate],
            norm_eps=cfg.norm_eps,
        )

    def embed(
        self,
        ids: jax.Array,
        token_types: jax.Array | None = None,
        word_vectors: jax.Array | None = None,
    ) -> jax.Array:
        """ids: [B, S] int -> normalised embeddings [B, S, D] (positions 0..S-1).

        `word_vectors` [B, S, D] replace the word-embedding lookup of `ids` (gradients and
        continuous optimization with respect to the input embeddings)."""
        s = ids.shape[1]
        if s > self.cfg.max_positions:
            raise ValueError(
                f"sequence length {s} exceeds max_positions={self.cfg.max_positions}; "
                "truncate the input (the MiniLM tokenizer truncates at 256)"
            )
        if token_types is None:
            token_types = jnp.zeros_like(ids)
        words = self.word_embed(ids) if word_vectors is None else word_vectors
        x = words + self.position_embed(jnp.arange(s))[None]
        return self.embed_norm(x + self.type_embed(token_types))

    def __call__(
        self,
        ids: jax.Array,
        valid: jax.Array,
        token_types: jax.Array | None = None,
        *,
        mask: jax.Array | None = None,
        word_vectors: jax.Array | None = None,
    ) -> jax.Array:
        """ids: [B, S] int; valid: [B, S] bool (False = padding); token_types: [B, S] int or None
        -> hidden states [B, S, D]. Padding keys are masked out of attention, so the states of
        valid tokens do not depend on how much padding follows them. `mask` [B|1, 1, S, S]
        further restricts attention (True = attend); `word_vectors` see `embed`."""
        x = self.embed(ids, token_types, word_vectors)
        return self.encoder(x, valid=valid, mask=mask)


def mean_pool(hidden: jax.Array, valid: jax.Array) -> jax.Array:
    """hidden: [B, S, D], valid: [B, S] bool -> [B, D] mean over the valid tokens.

    A row without any valid token (batch padding) pools to zeros instead of 0/0 = NaN.
    """
    w = valid.astype(hidden.dtype)[..., None]
    return (hidden * w).sum(1) / jnp.maximum(w.sum(1), 1.0)


def l2_normalize(x: jax.Array, eps: float = 1e-12) -> jax.Array:
    """x / max(||x||, eps) along the last axis (torch.nn.functional.normalize's convention)."""
    return x / jnp.maximum(jnp.linalg.norm(x, axis=-1, keepdims=True), eps)
