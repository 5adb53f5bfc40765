"""The next-scale transformer for super-resolution, after VAR (`FoundationVision/VAR`,
`models/var.py`, read for semantics only), on the shared pre-LN blocks.

Sequence: all tokens of all scales, L = sum_k p_k^2. Input of scale 0: a learned start token;
input of scale k >= 1: word_embed(area_down(f_hat_{<k}, p_k)) (quantizer.teacher_inputs); plus
an absolute position embedding and a level (scale) embedding. The block-causal mask lets a
token see every token of its own and coarser scales. Output: logits over the codebook for every
position; the tokens of scale k are predicted from the inputs of scales <= k.

SR use (HIT; Reconstruction): the LR image's tokens fill the scales <= k_1 (the prefix, no
loss); the model predicts the scales > k_1, one scale at a time at inference (`generate`).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.var_sr.quantizer import MultiScaleRQ, block_causal_mask
from shared.models.transformer import EncoderBlock


class NextScaleTransformer(nnx.Module):
    def __init__(
        self,
        patch_nums: Sequence[int],
        vocab: int,
        latent_dim: int,
        dim: int = 128,
        depth: int = 4,
        heads: int = 4,
        *,
        rngs: nnx.Rngs,
    ):
        self.patch_nums = tuple(patch_nums)
        length = sum(p * p for p in self.patch_nums)
        self.start = nnx.Param(0.02 * jax.random.normal(rngs.params(), (1, 1, dim)))
        self.word_embed = nnx.Linear(latent_dim, dim, rngs=rngs)
        self.pos = nnx.Param(0.02 * jax.random.normal(rngs.params(), (length, dim)))
        self.level = nnx.Param(0.02 * jax.random.normal(rngs.params(), (len(patch_nums), dim)))
        self.blocks = nnx.List([EncoderBlock(dim, heads, 4 * dim, rngs=rngs)
                                for _ in range(depth)])  # fmt: skip
        self.norm = nnx.LayerNorm(dim, rngs=rngs)
        self.head = nnx.Linear(dim, vocab, rngs=rngs)
        self.levels = np.concatenate([np.full(p * p, k) for k, p in enumerate(self.patch_nums)])
        self.mask = block_causal_mask(self.patch_nums)

    def __call__(self, inputs: Sequence[jax.Array]) -> jax.Array:
        """inputs: teacher-forcing maps of scales 1..K-1 ([b, p_k, p_k, C]) -> logits [b, L, V]."""
        b = inputs[0].shape[0]
        tokens = [jnp.broadcast_to(self.start.value, (b, 1, self.start.value.shape[-1]))]
        tokens += [self.word_embed(x.reshape(b, -1, x.shape[-1])) for x in inputs]
        h = jnp.concatenate(tokens, 1) + self.pos.value + self.level.value[self.levels]
        mask = jnp.asarray(self.mask)[None, None]
        for block in self.blocks:
            h = block(h, mask=mask)
        return self.head(self.norm(h))


def scale_slices(patch_nums: Sequence[int]) -> list[slice]:
    """The positions of each scale in the flat sequence."""
    ends = np.cumsum([p * p for p in patch_nums])
    return [slice(int(e - p * p), int(e)) for e, p in zip(ends, patch_nums)]


def flatten_codes(codes: Sequence[jax.Array]) -> jax.Array:
    """Token ids per scale [b, p_k, p_k] -> [b, L]."""
    return jnp.concatenate([c.reshape(c.shape[0], -1) for c in codes], 1)


def generate(
    model: NextScaleTransformer,
    rq: MultiScaleRQ,
    prefix: Sequence[jax.Array],
    side: int,
    key: jax.Array | None = None,
    temperature: float = 1.0,
) -> list[jax.Array]:
    """Completes the token ids of every scale given those of the first len(prefix) scales
    (the LR tokens): scale by scale, greedy (key None) or sampled at `temperature`."""
    codes = list(prefix)
    slices = scale_slices(model.patch_nums)
    b = prefix[0].shape[0]
    for k in range(len(prefix), len(model.patch_nums)):
        p = model.patch_nums[k]
        # later scales' inputs are not seen by scale k (block-causal): zeros stand in
        full = codes + [jnp.zeros((b, q, q), jnp.int32) for q in model.patch_nums[k:]]
        logits = model(rq.teacher_inputs(full, side))[:, slices[k]]
        if key is None:
            z = jnp.argmax(logits, -1)
        else:
            z = jax.random.categorical(jax.random.fold_in(key, k), logits / temperature)
        codes.append(z.reshape(b, p, p).astype(jnp.int32))
    return codes
