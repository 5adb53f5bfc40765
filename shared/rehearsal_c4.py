"""Tiny C4 for rehearsals (shared/rehearsal.py): shards in allenai/c4 `en`'s layout, read by
`shared.data.c4`, and a T5-style sentencepiece model beside them.

    c4-train.00000-of-01024.json.gz, c4-train.00001-of-01024.json.gz   JSON lines {"text": ...}
    c4-validation.00000-of-00008.json.gz
    spiece.model        pad 0, eos 1, unk 2 (T5's ids), trained on these documents

The sentencepiece model needs the optional `sentencepiece` package (extra `c4`). Where it is not
installed, `t5_stand_in` replaces `c4.T5SentencePiece` for the run with a byte tokenizer on
T5's special ids, so everything else (shards, reader, packing, model, mesh, checkpoints) still
runs for real; the rehearsal report names the stand-in.
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import io
import json
import pathlib
from collections.abc import Iterator, Sequence

import numpy as np

from shared.data import c4

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no will "
    "more can said who out do up time about what some into them only other new people could"
).split()


def documents(n: int, seed: int, words: tuple[int, int] = (40, 120)) -> list[str]:
    """n pseudo-English documents of `words` (low, high) words each, from a fixed word list."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n):
        k = int(rng.integers(*words))
        ids = rng.zipf(1.3, k) % len(WORDS)  # a skewed unigram, as text has
        docs.append(" ".join(WORDS[i] for i in ids).capitalize() + ".")
    return docs


def has_sentencepiece() -> bool:
    return importlib.util.find_spec("sentencepiece") is not None


def write_shards(directory: pathlib.Path, train: int = 64, validation: int = 32) -> pathlib.Path:
    """Two train shards and one validation shard of generated documents (+ spiece.model when
    sentencepiece is installed); returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    docs = documents(train, seed=1)
    half = len(docs) // 2
    n_train, n_val = c4.SHARDS["train"], c4.SHARDS["validation"]
    _jsonl_gz(directory / f"c4-train.00000-of-{n_train:05d}.json.gz", docs[:half])
    _jsonl_gz(directory / f"c4-train.00001-of-{n_train:05d}.json.gz", docs[half:])
    val = documents(validation, seed=2)
    _jsonl_gz(directory / f"c4-validation.00000-of-{n_val:05d}.json.gz", val)
    if has_sentencepiece():
        _train_spiece(directory / "spiece.model", docs + val)
    return directory


def _jsonl_gz(path: pathlib.Path, texts: Sequence[str]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"text": t, "url": f"https://example.org/{i}"}) + "\n")


def _train_spiece(path: pathlib.Path, texts: Sequence[str], vocab: int = 96) -> None:
    """A unigram model with T5's special ids (pad 0, eos 1, unk 2, no bos)."""
    import sentencepiece

    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=out,
        vocab_size=vocab,
        model_type="unigram",
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        hard_vocab_limit=False,
        minloglevel=2,
    )
    path.write_bytes(out.getvalue())


class T5ByteStandIn:
    """Bytes shifted past T5's special ids (pad 0, eos 1, unk 2): vocab 259."""

    def __init__(self, model_file: str | pathlib.Path):
        self.vocab_size, self.eos_id, self.pad_id = 259, 1, 0

    def encode(self, text: str) -> list[int]:
        return [b + 3 for b in text.encode("utf-8")]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(int(i) - 3 for i in ids if int(i) >= 3).decode("utf-8", errors="replace")


@contextlib.contextmanager
def t5_stand_in() -> Iterator[str]:
    """Replaces `c4.T5SentencePiece` with `T5ByteStandIn` while sentencepiece is missing;
    yields what it stood in for ("" when nothing)."""
    if has_sentencepiece():
        yield ""
        return
    real = c4.T5SentencePiece
    c4.T5SentencePiece = T5ByteStandIn
    try:
        yield "T5 tokenizer: a byte stand-in (sentencepiece, extra `c4`, is not installed)"
    finally:
        c4.T5SentencePiece = real
