"""Language-modelling inputs: documents -> one token stream -> packed windows -> shuffled batches.

A tokenizer is any object with `encode(text) -> list[int]`, `eos_id` and `vocab_size`
(`shared.data.tokenizers.ByteTokenizer`, for one). Each window holds seq_len + 1 tokens so that
inputs = w[:-1] and targets = w[1:] are both seq_len long; documents run across window edges,
with `eos_id` after each one so the model sees where a document ends.
"""

from __future__ import annotations

from collections.abc import Iterable

import grain
import numpy as np

from shared.data.pipeline import batch_iterator
from shared.data.text import Document
from shared.data.tokenizers import Tokenizer


def token_stream(docs: Iterable[Document | str], tokenizer: Tokenizer) -> np.ndarray:
    """All documents tokenized and joined, `eos_id` after each -> [n_tokens] int32."""
    vocab = getattr(tokenizer, "vocab_size", None)
    pieces = []
    for doc in docs:
        text = doc.text if isinstance(doc, Document) else doc
        pieces.append(np.asarray(tokenizer.encode(text), np.int64))
        pieces.append(np.asarray([tokenizer.eos_id], np.int64))
    if not pieces:
        raise ValueError("no documents to tokenize")
    stream = np.concatenate(pieces)
    # JAX does not raise on an out-of-range embedding index (it clamps or fills), so an id
    # outside the vocabulary would train silently on the wrong row: check once here.
    if stream.min() < 0 or (vocab is not None and stream.max() >= vocab):
        raise ValueError(
            f"token ids span [{stream.min()}, {stream.max()}], outside the tokenizer's "
            f"vocabulary [0, {vocab}); check the tokenizer's eos_id and vocab_size"
        )
    return stream.astype(np.int32)


def pack_documents(
    docs: Iterable[Document | str], tokenizer: Tokenizer, seq_len: int
) -> np.ndarray:
    """Documents -> non-overlapping windows [n_windows, seq_len + 1] int32 of the token stream.

    Row i is stream[i * (seq_len + 1) : (i + 1) * (seq_len + 1)]; inputs = row[:-1],
    targets = row[1:]. The stream's last partial window (< seq_len + 1 tokens) is dropped.
    """
    if seq_len < 1:
        raise ValueError(f"seq_len={seq_len} must be at least 1")
    stream = token_stream(docs, tokenizer)
    width = seq_len + 1
    n_windows = len(stream) // width
    if n_windows == 0:
        raise ValueError(
            f"the corpus has {len(stream)} tokens (with end-of-document ids), fewer than one "
            f"window of seq_len + 1 = {width}; lower seq_len or add documents"
        )
    return stream[: n_windows * width].reshape(n_windows, width)


def lm_batches(
    windows: np.ndarray, batch_size: int, seed: int, *, process_rows: bool = False
) -> grain.DatasetIterator:
    """Endless shuffled batches `{"tokens": [batch_size, seq_len + 1] int32}` of packed windows.

    Reshuffled every epoch, last partial batch dropped; `get_state()`/`set_state()` resume
    exactly; `process_rows`: this process's rows of each batch only (see
    `shared.data.pipeline.batch_iterator`).
    """
    if windows.ndim != 2:
        raise ValueError(f"windows must be [n_windows, seq_len + 1], got shape {windows.shape}")
    return batch_iterator({"tokens": windows}, batch_size, seed, process_rows=process_rows)


def unigram_entropy(train_tokens: np.ndarray, eval_tokens: np.ndarray, vocab_size: int) -> float:
    """Cross-entropy (nats per token) on eval_tokens of an add-one smoothed unigram model fitted
    on train_tokens: the baseline a language model must beat (a byte-level model that only
    learns letter frequencies lands here)."""
    train = np.asarray(train_tokens).ravel()
    evals = np.asarray(eval_tokens).ravel()
    for name, t in (("train_tokens", train), ("eval_tokens", evals)):
        if t.size == 0:
            raise ValueError(f"{name} is empty")
        if t.min() < 0 or t.max() >= vocab_size:
            raise ValueError(f"{name} holds ids outside [0, vocab_size={vocab_size})")
    counts = np.bincount(train, minlength=vocab_size) + 1.0
    log_p = np.log(counts) - np.log(counts.sum())
    return float(-log_p[evals].mean())
