"""The two PRMs of the spec (§5): step logits at every position, read at the step tags.

Both map a collated batch (processors.collate) to logits [B, S]; the step score is
sigmoid(logit) at each step tag. `word_vectors` [B, S, D] replace the input word embeddings
(the gradient of GCG and the continuous attack, attacks.py); `word_table()` is the [V, D] table
they come from.
- `DecoderPRM`: the shared LLaMA decoder trained here from scratch; its step logit is
  logit("good") - logit("bad") of the LM head at the tag, i.e. softmax over two label words
  (Math-Shepherd's extraction; a sigmoid head on the last hidden state, spec option (a)).
- `MiniLMPRM`: all-MiniLM-L6-v2 (shared/models/pretrained/minilm.py) with a linear step-scoring
  head on the hidden state of each step's [SEP] tag (spec option (b)). Reconstruction: attention
  is block-causal (a token of step k sees the question and steps 1..k), so one forward gives
  r_k = PRM(question, steps 1..k) for every k, exactly as k separate prefix forwards would;
  alternative considered: full bidirectional attention, where r_k would also read later steps
  and r_min would no longer be a prefix score.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from shared.models.bert import Bert
from shared.models.llama import Llama, LlamaConfig

LABEL_WORDS = ("good", "bad")  # the decoder PRM's label words (its vocabulary includes them)


class DecoderPRM(nnx.Module):
    def __init__(self, cfg: LlamaConfig, good_id: int, bad_id: int, *, rngs: nnx.Rngs):
        self.llama = Llama(cfg, rngs=rngs)
        self.good_id, self.bad_id = good_id, bad_id

    def word_table(self) -> jax.Array:
        return self.llama.embed_tokens.embedding[...]

    def __call__(
        self, batch: dict, word_vectors: jax.Array | None = None, with_lm: bool = False
    ) -> jax.Array | tuple[jax.Array, jax.Array]:
        """batch["ids"]: [B, S] -> step logits [B, S] (causal: position t reads tokens <= t);
        with_lm: also the next-token logits [B, S, V] (the auxiliary LM loss of training)."""
        logits = self.llama(batch["ids"], embeddings=word_vectors)
        steps = logits[..., self.good_id] - logits[..., self.bad_id]
        return (steps, logits) if with_lm else steps


def block_causal_mask(blocks: jax.Array) -> jax.Array:
    """blocks [B, S] (chunk index per token) -> [B, 1, S, S]: query q sees key k iff
    blocks[k] <= blocks[q]. Padding (block -1) is removed by the padding mask."""
    return (blocks[:, None, :] <= blocks[:, :, None])[:, None]


class MiniLMPRM(nnx.Module):
    def __init__(self, bert: Bert, *, rngs: nnx.Rngs):
        self.bert = bert
        self.head = nnx.Linear(bert.cfg.dim, 1, rngs=rngs)

    def word_table(self) -> jax.Array:
        return self.bert.word_embed.embedding[...]

    def __call__(self, batch: dict, word_vectors: jax.Array | None = None) -> jax.Array:
        """batch ids, types, blocks, valid: [B, S] -> step logits [B, S]."""
        hidden = self.bert(
            batch["ids"],
            batch["valid"],
            batch["types"],
            mask=block_causal_mask(batch["blocks"]),
            word_vectors=word_vectors,
        )
        return self.head(hidden)[..., 0]


def gather_steps(logits: jax.Array, ends: jax.Array) -> jax.Array:
    """logits [B, S], ends [B, K] positions -> [B, K] step logits."""
    return jnp.take_along_axis(logits, ends, axis=1)
