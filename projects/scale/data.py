"""Packed token windows for the SCALE runs: offline text (cpu) or local C4 shards (paper).

Wikipedia leads (default) or Shakespeare, split 95/5 by document id, byte tokenizer; the paper
config reads C4 JSON-lines shards with the T5 sentencepiece tokenizer through shared.data.c4.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from shared.data.lm_pipeline import pack_documents
from shared.data.text import load_corpus
from shared.data.tokenizers import ByteTokenizer


@dataclasses.dataclass(frozen=True)
class LMData:
    train: np.ndarray  # [n_train, seq_len + 1] int32
    val: np.ndarray  # [n_val, seq_len + 1] int32, a fixed seeded order
    vocab_size: int


@functools.lru_cache(maxsize=4)
def _text(corpus: str, seq_len: int) -> LMData:
    tok = ByteTokenizer()
    split = load_corpus(corpus, seed=0, fractions=(0.95, 0.05, 0.0))
    train = pack_documents(split.train, tok, seq_len)
    val = pack_documents(split.validation, tok, seq_len)
    # a fixed shuffle so that the first k windows are a fair sample of the whole split
    val = val[np.random.default_rng(0).permutation(len(val))]
    return LMData(train, val, tok.vocab_size)


def load(cfg) -> LMData:
    """The windows for `cfg` (a projects.scale.experiment.Config)."""
    if cfg.data == "c4":
        from shared.data import c4  # the paper config only: local shards + T5 tokenizer

        return c4.lm_data(cfg.data_dir, cfg.seq_len)
    return _text(cfg.data, cfg.seq_len)
