import math

import numpy as np
import pytest

from shared.data import lm_pipeline
from shared.data.text import Document


class LetterTokenizer:
    """'a'..'z' -> 0..25; 26 ends a document. Small ids make the packed stream easy to read."""

    vocab_size = 27
    eos_id = 26

    def encode(self, text: str) -> list[int]:
        return [ord(c) - ord("a") for c in text]


DOCS = ["abc", "de", "fghij"]
STREAM = [0, 1, 2, 26, 3, 4, 26, 5, 6, 7, 8, 9, 26]  # each document, then the end id


def test_windows_are_the_concatenated_stream():
    assert lm_pipeline.token_stream(DOCS, LetterTokenizer()).tolist() == STREAM
    w = lm_pipeline.pack_documents(DOCS, LetterTokenizer(), seq_len=3)
    assert w.dtype == np.int32 and w.shape == (3, 4)  # 13 tokens: 3 windows of 4, 1 dropped
    assert w.tolist() == [[0, 1, 2, 26], [3, 4, 26, 5], [6, 7, 8, 9]]
    inputs, targets = w[:, :-1], w[:, 1:]
    for i in range(3):  # the target of every position is the next token of the stream
        for j in range(3):
            assert inputs[i, j] == STREAM[4 * i + j] and targets[i, j] == STREAM[4 * i + j + 1]
    docs = [Document(str(i), t) for i, t in enumerate(DOCS)]
    assert np.array_equal(lm_pipeline.pack_documents(docs, LetterTokenizer(), 3), w)
    assert lm_pipeline.pack_documents(DOCS, LetterTokenizer(), 12).tolist() == [STREAM]


def test_packing_fails_clearly():
    with pytest.raises(
        ValueError, match="13 tokens .* fewer than one window of seq_len \\+ 1 = 14"
    ):
        lm_pipeline.pack_documents(DOCS, LetterTokenizer(), seq_len=13)
    with pytest.raises(ValueError, match="seq_len=0"):
        lm_pipeline.pack_documents(DOCS, LetterTokenizer(), seq_len=0)
    with pytest.raises(ValueError, match="outside the tokenizer's vocabulary"):
        lm_pipeline.pack_documents(["ab|"], LetterTokenizer(), seq_len=2)  # '|' encodes to 27
    with pytest.raises(ValueError, match=r"token ids span \[-32, "):
        lm_pipeline.pack_documents(["Ab"], LetterTokenizer(), seq_len=2)  # 'A' encodes to -32
    with pytest.raises(ValueError, match="no documents"):
        lm_pipeline.pack_documents([], LetterTokenizer(), seq_len=2)


def test_byte_tokenizer_windows_decode_to_the_text():
    from shared.data.tokenizers import ByteTokenizer

    tok = ByteTokenizer()
    w = lm_pipeline.pack_documents(["BERNARDO:\nWho's there?", "FRANCISCO:\nNay"], tok, 7)
    assert w.shape == (4, 8)  # 22 + 1 + 14 + 1 = 38 tokens, the last 6 dropped
    assert w[2, 6] == tok.eos_id
    assert tok.decode(w.ravel()) == "BERNARDO:\nWho's there?FRANCISCO"


def _take(it, n):
    return [next(it)["tokens"] for _ in range(n)]


def test_batches_shuffle_and_resume_exactly():
    windows = np.arange(10 * 5, dtype=np.int32).reshape(10, 5)  # row i starts with 5 * i
    it = lm_pipeline.lm_batches(windows, batch_size=4, seed=0)
    first = _take(it, 2)  # one epoch: 2 batches of 4 distinct rows, 2 rows dropped
    assert all(b.shape == (4, 5) and b.dtype == np.int32 for b in first)
    rows = np.concatenate(first)[:, 0] // 5
    assert len(set(rows.tolist())) == 8 and rows.tolist() != list(range(8))
    state = it.get_state()
    expected = _take(it, 5)  # crosses two epoch boundaries
    resumed = lm_pipeline.lm_batches(windows, batch_size=4, seed=0)
    resumed.set_state(state)
    assert all(np.array_equal(a, b) for a, b in zip(_take(resumed, 5), expected, strict=True))
    other = _take(lm_pipeline.lm_batches(windows, batch_size=4, seed=1), 2)
    assert not all(np.array_equal(a, b) for a, b in zip(other, first))
    with pytest.raises(ValueError, match="windows must be"):
        lm_pipeline.lm_batches(windows.ravel(), batch_size=4, seed=0)


def test_unigram_entropy_closed_forms():
    uniform = np.tile(np.arange(8), 5)
    assert lm_pipeline.unigram_entropy(uniform, [3, 3, 7], 8) == pytest.approx(math.log(8))
    # Counts [3, 0] + 1 -> p = [0.8, 0.2]
    h = lm_pipeline.unigram_entropy(np.array([0, 0, 0]), np.array([0, 1]), 2)
    assert h == pytest.approx(-(math.log(0.8) + math.log(0.2)) / 2)
    with pytest.raises(ValueError, match="eval_tokens holds ids outside"):
        lm_pipeline.unigram_entropy(np.array([0]), np.array([2]), 2)
