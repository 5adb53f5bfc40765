"""C4 (allenai/c4 `en`) from local shards, tokenized with a local T5 sentencepiece model, as
padded examples (the official SCALE/GaLore pipeline) or packed windows (`lm_pipeline`).

Layout under `root` (any subset of the shards; nothing is downloaded):
    c4-train.00000-of-01024.json.gz ... c4-train.01023-of-01024.json.gz   (or `.json`)
    c4-validation.00000-of-00008.json.gz ...
    c4-train.array_record-00000-of-01024 ...                              (TFDS ArrayRecord)
JSON lines carry the document in "text"; an ArrayRecord record is either such a JSON object or a
serialized `tf.train.Example` with a bytes feature "text" (how TFDS writes C4). ArrayRecord needs
the `array_record` module (a dependency of grain).

Two modes:
- "pad" (the official pipeline: `tokenizer(text, max_length=256, truncation=True,
  padding="max_length")`, labels = input ids with pads set to -100): one example per document,
  ids[:max_length - 1] + [eos], right-padded with pad_id. The model predicts labels[1:] from
  tokens[:-1] (the HF causal-LM shift).
- "pack": documents joined with eos and cut into [n, max_length + 1] windows
  (`shared.data.lm_pipeline`): no padding, every target counts.
`lm_data` gives packed train/validation windows for loops that take windows (`shared.train.lm`);
`stream_batches` builds batches on the fly for corpora that do not fit memory.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import pathlib
import re
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from shared.data.lm_pipeline import pack_documents, token_stream
from shared.data.resolver import MissingDataError
from shared.data.tokenizers import Tokenizer

SHARDS = {"train": 1024, "validation": 8}  # shard counts of allenai/c4 `en`
IGNORE = -100  # label of a padded position (torch's cross-entropy ignore_index)
SENTENCEPIECE_REQUIREMENT = "sentencepiece==0.2.3"
_JSON = re.compile(r"^c4-(?P<split>[a-z]+)\.(?P<i>\d{5})-of-(?P<n>\d{5})\.json(\.gz)?$")
_AREC = re.compile(r"^c4-(?P<split>[a-z]+)\.array_record-(?P<i>\d{5})-of-(?P<n>\d{5})$")


def c4_files(root: str | pathlib.Path, split: str) -> list[pathlib.Path]:
    """The split's shards under root, in shard order (JSON lines and ArrayRecord alike)."""
    if split not in SHARDS:
        raise ValueError(f"split={split!r}; C4 has {sorted(SHARDS)}")
    root = pathlib.Path(root)
    found = []
    for p in sorted(root.iterdir()) if root.is_dir() else []:
        m = _JSON.match(p.name) or _AREC.match(p.name)
        if m and m["split"] == split:
            found.append((int(m["i"]), p.name, p))
    if not found:
        raise MissingDataError(
            f"no C4 {split} shards in {root} (expected c4-{split}.00000-of-"
            f"{SHARDS[split]:05d}.json.gz, .json, or c4-{split}.array_record-00000-of-"
            f"{SHARDS[split]:05d}); copy the `en/` files of allenai/c4 there"
        )
    return [p for _, _, p in sorted(found)]


def _jsonl_texts(path: pathlib.Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)["text"]
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a JSON object with a 'text' field ({e})") from e


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, payload) of a protobuf message: bytes for length-delimited, else int."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        wire = key & 7
        if wire == 2:
            size, i = _varint(buf, i)
            yield key >> 3, buf[i : i + size]
            i += size
        elif wire == 0:
            v, i = _varint(buf, i)
            yield key >> 3, v
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")


def example_text(record: bytes, feature: str = "text") -> str:
    """The bytes feature `feature` of a serialized tf.train.Example (no TensorFlow needed).

    Example{1: Features{1: map entry{1: key, 2: Feature{1: BytesList{1: value}}}}}.
    """
    for f1, features in _fields(record):
        if f1 != 1:
            continue
        for f2, entry in _fields(features):
            fields = dict(_fields(entry)) if f2 == 1 else {}
            if fields.get(1) == feature.encode():
                for f3, bytes_list in _fields(fields.get(2, b"")):
                    if f3 == 1:
                        return b"".join(v for k, v in _fields(bytes_list) if k == 1).decode()
    raise ValueError(f"the tf.train.Example has no bytes feature {feature!r}")


def _array_record_texts(path: pathlib.Path) -> Iterator[str]:
    try:
        from array_record.python.array_record_module import ArrayRecordReader
    except ImportError as e:
        raise ImportError(
            f"{path.name} is an ArrayRecord shard and the `array_record` module is missing; "
            "install it with: pip install array-record (grain depends on it)"
        ) from e
    reader = ArrayRecordReader(str(path))
    try:
        for start in range(0, reader.num_records(), 1024):
            for rec in reader.read(list(range(start, min(start + 1024, reader.num_records())))):
                yield json.loads(rec)["text"] if rec[:1] == b"{" else example_text(rec)
    finally:
        reader.close()


def read_documents(
    files: Sequence[pathlib.Path],
    *,
    seed: int | None = None,
    shuffle_buffer: int = 0,
    shard_index: int = 0,
    shard_count: int = 1,
) -> Iterator[str]:
    """Document texts of the shards.

    shard_index/shard_count: this process reads files[shard_index::shard_count] (one host's part
    of a data-parallel run). seed: shuffle the file order with it; shuffle_buffer > 0: then mix
    documents through a buffer of that size (like a streaming `datasets` shuffle, whose default
    buffer is 1,000; the order is not the same as theirs). seed=None keeps the file order.
    """
    if not 0 <= shard_index < shard_count:
        raise ValueError(f"shard_index={shard_index} must be in [0, shard_count={shard_count})")
    files = list(files)
    rng = np.random.default_rng(seed) if seed is not None else None
    if rng is not None:
        files = [files[i] for i in rng.permutation(len(files))]
    files = files[shard_index::shard_count]

    def texts() -> Iterator[str]:
        for p in files:
            yield from _array_record_texts(p) if _AREC.match(p.name) else _jsonl_texts(p)

    if shuffle_buffer <= 0 or rng is None:
        yield from texts()
        return
    buf: list[str] = []
    for t in texts():
        if len(buf) < shuffle_buffer:
            buf.append(t)
            continue
        i = int(rng.integers(shuffle_buffer))
        yield buf[i]
        buf[i] = t
    for i in rng.permutation(len(buf)):
        yield buf[i]


class T5SentencePiece:
    """The T5 tokenizer from its local sentencepiece model (`spiece.model` of t5-base: 32,000
    pieces, pad 0, eos 1, unk 2). `encode` returns the pieces' ids without eos; the padded
    examples append it, as HF's T5 tokenizer does. The `sentencepiece` package is imported only
    here; it is optional."""

    def __init__(self, model_file: str | pathlib.Path):
        try:
            import sentencepiece
        except ImportError as e:
            raise ImportError(
                "the T5 tokenizer needs the optional `sentencepiece` package: "
                f"pip install {SENTENCEPIECE_REQUIREMENT}"
            ) from e
        path = pathlib.Path(model_file)
        if not path.is_file():
            raise MissingDataError(
                f"no sentencepiece model at {path}; point it at t5-base's spiece.model"
            )
        self.sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
        self.vocab_size = int(self.sp.get_piece_size())
        self.eos_id = int(self.sp.eos_id())
        self.pad_id = int(self.sp.pad_id())

    def encode(self, text: str) -> list[int]:
        return list(self.sp.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        keep = [int(i) for i in ids if int(i) not in (self.pad_id, IGNORE)]
        return self.sp.decode(keep)


def pad_examples(
    texts: Iterable[str], tokenizer: Tokenizer, max_length: int = 256, pad_id: int | None = None
) -> dict[str, np.ndarray]:
    """One example per document, as the official pipeline builds them.

    Returns {"tokens": [n, max_length] int32, "labels": [n, max_length] int32}: tokens =
    ids[:max_length - 1] + [eos] then pad_id; labels = tokens with the padded positions set to
    IGNORE (-100). pad_id defaults to the tokenizer's `pad_id`. The official code masks by value
    (labels[input_ids == pad_id] = -100); masking by position is the same whenever text never
    encodes to pad_id, as with T5's sentencepiece, where pad is a control symbol.
    """
    if max_length < 2:
        raise ValueError(f"max_length={max_length} must be at least 2 (a token and eos)")
    pad_id = getattr(tokenizer, "pad_id", None) if pad_id is None else pad_id
    if pad_id is None:
        raise ValueError("the tokenizer has no pad_id; pass pad_id=")
    rows, lengths = [], []
    for text in texts:
        ids = tokenizer.encode(text)[: max_length - 1] + [tokenizer.eos_id]
        rows.append(ids)
        lengths.append(len(ids))
    if not rows:
        raise ValueError("no documents to tokenize")
    tokens = np.full((len(rows), max_length), pad_id, np.int32)
    for r, ids in enumerate(rows):
        tokens[r, : len(ids)] = ids
    real = np.arange(max_length)[None, :] < np.asarray(lengths)[:, None]
    labels = np.where(real, tokens, IGNORE).astype(np.int32)
    vocab = getattr(tokenizer, "vocab_size", None)
    if tokens.min() < 0 or (vocab is not None and tokens.max() >= vocab):
        raise ValueError(f"token ids outside the vocabulary [0, {vocab}); check pad_id/eos_id")
    return {"tokens": tokens, "labels": labels}


def c4_examples(
    root: str | pathlib.Path,
    split: str,
    tokenizer: Tokenizer,
    *,
    mode: str = "pad",
    max_length: int = 256,
    max_documents: int | None = None,
    seed: int | None = None,
    shard_index: int = 0,
    shard_count: int = 1,
) -> dict[str, np.ndarray]:
    """In-memory examples of the first `max_documents` documents (all when None).

    mode="pad": {"tokens", "labels"} [n, max_length] (see `pad_examples`).
    mode="pack": {"tokens"} [n, max_length + 1] windows of `lm_pipeline.pack_documents`.
    Feed either to `shared.data.pipeline.batch_iterator` for shuffled, resumable batches.
    """
    if mode not in ("pad", "pack"):
        raise ValueError(f"mode={mode!r}; choose 'pad' (official) or 'pack'")
    docs = read_documents(
        c4_files(root, split), seed=seed, shard_index=shard_index, shard_count=shard_count
    )
    texts = [t for _, t in zip(range(max_documents), docs)] if max_documents else list(docs)
    if mode == "pad":
        return pad_examples(texts, tokenizer, max_length)
    return {"tokens": pack_documents(texts, tokenizer, max_length)}


def stream_batches(
    texts: Iterable[str], tokenizer: Tokenizer, batch_size: int, *, mode: str = "pad",
    max_length: int = 256,
) -> Iterator[dict[str, np.ndarray]]:  # fmt: skip
    """Batches built on the fly from a document iterator (for corpora that do not fit memory,
    like the paper's 2.6B tokens). pad: {"tokens", "labels"} [batch_size, max_length];
    pack: {"tokens"} [batch_size, max_length + 1] cut from the running eos-joined stream.
    The last partial batch is dropped."""
    if mode not in ("pad", "pack"):
        raise ValueError(f"mode={mode!r}; choose 'pad' (official) or 'pack'")
    width = max_length + 1
    pending: list[str] = []
    stream = np.zeros(0, np.int32)
    for text in texts:
        if mode == "pad":
            pending.append(text)
            if len(pending) == batch_size:
                yield pad_examples(pending, tokenizer, max_length)
                pending = []
            continue
        stream = np.concatenate([stream, token_stream([text], tokenizer)])
        while len(stream) >= batch_size * width:
            yield {"tokens": stream[: batch_size * width].reshape(batch_size, width)}
            stream = stream[batch_size * width :]


@dataclasses.dataclass(frozen=True)
class C4Windows:
    train: np.ndarray  # [n_train, seq_len + 1] int32 packed windows
    val: np.ndarray  # [n_val, seq_len + 1] int32, the validation split in shard order
    vocab_size: int


def lm_data(
    root: str | pathlib.Path,
    seq_len: int = 256,
    *,
    tokenizer: Tokenizer | None = None,
    max_train_documents: int | None = None,
    val_tokens: int = 10_000_000,
    seed: int = 42,
) -> C4Windows:
    """Packed windows of local C4 for a training loop that takes `[n, seq_len + 1]` windows.

    tokenizer: default `T5SentencePiece(root / "spiece.model")`. train: the first
    `max_train_documents` documents (all when None) with the file order shuffled by `seed`.
    val: validation documents in shard order until `val_tokens` tokens are read (the official
    evaluation stops after ~10M tokens). Packing differs from the official pad-to-max-length
    examples (`c4_examples(mode="pad")`): no pad tokens, and documents run across windows.
    """
    tok = (
        tokenizer if tokenizer is not None else T5SentencePiece(pathlib.Path(root) / "spiece.model")
    )
    train_docs = read_documents(c4_files(root, "train"), seed=seed)
    if max_train_documents is not None:
        train_docs = (t for _, t in zip(range(max_train_documents), train_docs))
    val_docs, n_tokens = [], 0
    for text in read_documents(c4_files(root, "validation")):
        if n_tokens >= val_tokens:
            break
        val_docs.append(text)
        n_tokens += len(tok.encode(text)) + 1  # + eos
    return C4Windows(
        train=pack_documents(train_docs, tok, seq_len),
        val=pack_documents(val_docs, tok, seq_len),
        vocab_size=int(tok.vocab_size),
    )
