"""Token windows for the three settings: held-out Wikipedia for SmolLM2, Shakespeare bytes for
the from-scratch ablation, local C4 shards (`shared.data.c4`) for the paper config.

The split of a corpus is fixed (split seed 0, independent of the run's seed), so every run and
every seed is evaluated on the same held-out windows; the run's seed only orders the training
batches. Evaluation uses the first `eval_tokens // seq_len` validation windows.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from shared.data.c4 import c4_files, read_documents
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


def load_windows(
    corpus: str, tokenizer: str, seq_len: int, eval_tokens: int, data_dir: str = ""
) -> Windows:
    """Packed next-token windows of a corpus; `eval_tokens` fixes the held-out token count."""
    tok = tokenizer_for(tokenizer)
    if corpus == "c4":
        # Reconstruction: c4/en's own train/validation shards stand in for the paper's split.
        train = pack_documents(read_documents(c4_files(data_dir, "train")), tok, seq_len)
        held = pack_documents(read_documents(c4_files(data_dir, "validation")), tok, seq_len)
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
