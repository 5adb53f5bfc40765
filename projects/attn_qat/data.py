"""Token windows for the three settings: held-out Wikipedia for SmolLM2, Shakespeare bytes for
the from-scratch ablation, local C4 JSON-lines shards for the paper config.

The split of a corpus is fixed (split seed 0, independent of the run's seed), so every run and
every seed is evaluated on the same held-out windows; the run's seed only orders the training
batches. Evaluation uses the first `eval_tokens // seq_len` validation windows.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import json
import pathlib
from collections.abc import Iterator

import numpy as np

from shared.data.lm_pipeline import pack_documents
from shared.data.text import load_corpus
from shared.data.tokenizers import ByteTokenizer, smollm2_tokenizer

SPLIT_SEED = 0  # fixed document split: the held-out text never depends on the run's seed


@dataclasses.dataclass(frozen=True)
class Windows:
    train: np.ndarray  # [n_train, seq_len + 1] int32
    eval: np.ndarray  # [n_eval, seq_len + 1] int32, fixed across runs
    vocab_size: int


def tokenizer_for(name: str):
    if name == "byte":
        return ByteTokenizer()
    if name == "smollm2":
        return smollm2_tokenizer()
    raise ValueError(f"data.tokenizer={name!r} is unknown; choose 'byte' or 'smollm2'")


def _c4_texts(data_dir: str, pattern: str) -> Iterator[str]:
    """The "text" field of every line of the local C4 JSON-lines shards (plain or .gz)."""
    files = sorted(glob.glob(str(pathlib.Path(data_dir) / pattern)))
    if not files:
        raise FileNotFoundError(
            f"no C4 shards match {pattern!r} in data.data_dir={data_dir!r}; put the c4/en "
            "JSON-lines files (e.g. c4-train.00000-of-01024.json.gz) there"
        )
    for f in files:
        with (gzip.open if f.endswith(".gz") else open)(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                yield json.loads(line)["text"]


def load_windows(
    corpus: str, tokenizer: str, seq_len: int, eval_tokens: int, data_dir: str = ""
) -> Windows:
    """Packed next-token windows of a corpus; `eval_tokens` fixes the held-out token count."""
    tok = tokenizer_for(tokenizer)
    if corpus == "c4":
        # Reconstruction: c4/en's own train/validation shards stand in for the paper's split.
        train = pack_documents(_c4_texts(data_dir, "c4-train.*.json*"), tok, seq_len)
        held = pack_documents(_c4_texts(data_dir, "c4-validation.*.json*"), tok, seq_len)
    else:
        c = load_corpus(corpus, SPLIT_SEED)
        train = pack_documents(c.train, tok, seq_len)
        held = pack_documents(c.validation, tok, seq_len)
    n_eval = eval_tokens // seq_len
    if n_eval < 1 or n_eval > len(held):
        raise ValueError(
            f"data.eval_tokens={eval_tokens} gives {n_eval} windows of {seq_len} tokens; the "
            f"{corpus} validation split holds {len(held)}: choose eval_tokens in "
            f"[{seq_len}, {len(held) * seq_len}]"
        )
    return Windows(train, held[:n_eval], tok.vocab_size)
