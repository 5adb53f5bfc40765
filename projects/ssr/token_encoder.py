"""Frozen all-MiniLM-L6-v2 token vectors: every text -> its last hidden states [n_tokens, 384]
without [CLS] and [SEP], and its mean-pooled sentence vector (the model's own pooling, used for
the single-vector baseline and as SSR-CLS's [CLS] representation).

Texts are tokenized with [CLS] ... [SEP] and truncated to `max_tokens`, sorted by length and
batched with length buckets (shared.models.pretrained.minilm), so the output does not depend on
batch composition.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from projects.ssr.late_interaction import TokenCollection
from shared.data.tokenizers import minilm_tokenizer
from shared.models.bert import l2_normalize, mean_pool
from shared.models.pretrained.minilm import length_sorted_batches, load_minilm


@dataclasses.dataclass(frozen=True)
class EncodedTexts:
    tokens: TokenCollection  # [T, 384] float32 token vectors (no [CLS]/[SEP])
    pooled: np.ndarray  # [n, 384] unit-norm mean-pooled sentence vectors


@functools.partial(jax.jit, static_argnums=0)
def _hidden(graphdef, state, ids, valid):
    model = nnx.merge(graphdef, state)
    h = model(ids, valid)
    return h, l2_normalize(mean_pool(h, valid))


class TokenEncoder:
    def __init__(self, max_tokens: int = 128, batch_size: int = 64):
        model = load_minilm()
        self.graphdef, self.state = nnx.split(model)
        self.tokenizer = minilm_tokenizer(max_length=max_tokens)
        self.batch_size, self.max_len = batch_size, model.cfg.max_positions
        self.dim = model.cfg.dim

    def __call__(self, texts: Sequence[str], desc: str = "encode") -> EncodedTexts:
        rows = [self.tokenizer.encode(t) for t in texts]
        if any(len(r) < 3 for r in rows):
            bad = next(i for i, r in enumerate(rows) if len(r) < 3)
            raise ValueError(f"text {bad} ({texts[bad]!r}) has no word piece: drop empty texts")
        per_text: list[np.ndarray | None] = [None] * len(rows)
        pooled = np.zeros((len(rows), self.dim), np.float32)
        batches = length_sorted_batches(rows, self.batch_size, self.max_len, self.tokenizer.pad_id)
        for idx, ids, valid in tqdm(batches, desc=desc, leave=False,
                                    total=-(-len(rows) // self.batch_size)):  # fmt: skip
            h, p = _hidden(self.graphdef, self.state, jnp.asarray(ids), jnp.asarray(valid))
            h, p = np.asarray(h), np.asarray(p)
            for j, i in enumerate(idx):
                per_text[i] = h[j, 1 : len(rows[i]) - 1]  # drop [CLS] and [SEP]
                pooled[i] = p[j]
        return EncodedTexts(TokenCollection.from_list(per_text), pooled)
