"""The toy vision-language decoder: visual tokens from image patches, then question tokens, one
pre-norm LLaMA decoder (shared.models.llama) over the whole causal sequence.

Visual token i = W_patch · patch_i + pos_i (a linear projection and a learned position, as the
spec suggests); text tokens use the decoder's own embedding table. RoPE applies to every position,
as in LLaVA-style decoders whose visual tokens are ordinary sequence positions.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from projects.lost_in_attention.questions import ID, IMAGE, VOCAB
from shared.interp import Intervention, trace
from shared.models.llama import Llama, LlamaConfig


class ToyVLM(nnx.Module):
    def __init__(self, cfg: LlamaConfig, n_patches: int, patch_dim: int, *, rngs: nnx.Rngs):
        cfg = dataclasses.replace(cfg, vocab_size=len(VOCAB))
        self.decoder = Llama(cfg, rngs=rngs)
        init = nnx.initializers.normal(cfg.init_std)
        self.patch_proj = nnx.Linear(patch_dim, cfg.dim, kernel_init=init, rngs=rngs)
        self.image_pos = nnx.Param(init(rngs.params(), (n_patches, cfg.dim)))
        self.n_patches = n_patches

    def inputs(self, patches: jax.Array, text: jax.Array) -> tuple[jax.Array, jax.Array]:
        """patches [B, P, p*p], text [B, Q] -> (token ids [B, P+Q], embeddings [B, P+Q, D]);
        visual positions carry the <img> id."""
        b = text.shape[0]
        visual = self.patch_proj(patches) + self.image_pos[...]
        embeddings = jnp.concatenate([visual, self.decoder.embed_tokens(text)], axis=1)
        tokens = jnp.concatenate([jnp.full((b, self.n_patches), ID[IMAGE], text.dtype), text], 1)
        return tokens, embeddings

    def __call__(self, patches: jax.Array, text: jax.Array) -> jax.Array:
        """Answer logits [B, vocab] at the last (question mark) position."""
        tokens, emb = self.inputs(patches, text)
        return self.decoder(tokens, embeddings=emb)[:, -1]

    def traced(
        self,
        patches: jax.Array,
        text: jax.Array,
        intervention: Intervention | None = None,
        capture: tuple[str, ...] = (),
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        """`shared.interp.trace` of the decoder: (answer logits [B, vocab], captures)."""
        tokens, emb = self.inputs(patches, text)
        logits, acts = trace(
            self.decoder, tokens, embeddings=emb, intervention=intervention, capture=capture
        )
        return logits[:, -1], acts


def answer_loss(model: ToyVLM, batch: dict) -> jax.Array:
    """Cross-entropy of the answer token (the only supervised position)."""
    logits = model(batch["patches"], batch["text"])
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, batch["answer"][:, None], axis=-1))
