"""A word-level tokenizer for small synthetic languages (arithmetic traces and their prompts).

Pre-tokenization (`pre_tokenize`) cuts text into words: a tag such as `<unk>`, `<ans>` or
`</smiles>` (a reserved marker, or an answer delimiter that a parser looks for), a run of
newlines (`\\n`, `\\n\\n` are words, so step and line breaks survive), a LaTeX command (`\\boxed`),
a run of letters/digits/underscores (`Step`, `17`, `Q1`), or a run of one repeated punctuation
character (`+`, `=`, `:`, `{`, `###`). Spaces and tabs only separate words.

Decoding joins words with one space, except: no space next to a newline run, none before
`. , : ; ? ! ) ] } {` and none after `( [ {` (or runs of them). Text written that way is
*canonical*, and `decode(encode(text)) == text` holds exactly for canonical text, e.g.
"Step 1: 17 + 25 = 42\\n\\n" or "\\boxed{42}". Other text comes back with its spacing
normalised; that map is idempotent except where joining glues two words into one that reads back
as a single word ("( (" -> "((", "\\n \\n" -> "\\n\\n").

Ids: pad 0, bos 1, eos 2, sep 3, unk 4, then the words. A word outside the vocabulary encodes to
unk, which decodes to the visible marker `<unk>`; `encode` maps a literal marker back to its id,
so decoded text re-encodes to the same unk (and, with `skip_special=False`, pad/bos/eos/sep) ids.
"""

from __future__ import annotations

import collections
import json
import pathlib
import re
from collections.abc import Iterable, Sequence

import numpy as np

PAD, BOS, EOS, SEP, UNK = "<pad>", "<bos>", "<eos>", "<sep>", "<unk>"
RESERVED = (PAD, BOS, EOS, SEP, UNK)  # ids 0..4, in this order
FILE_FORMAT = "shared.data.word_tokenizer/v1"

_WORD = re.compile(r"</?[A-Za-z_]+>|\n+|\\[A-Za-z]+|\w+|([^\w\s])\1*")
_NO_SPACE_BEFORE = frozenset(". , : ; ? ! ) ] } {".split())
_NO_SPACE_AFTER = frozenset("( [ {".split())


def pre_tokenize(text: str) -> list[str]:
    """Text -> words (see the module docstring); whitespace other than newlines is dropped."""
    return [m.group(0) for m in _WORD.finditer(text)]


def join_words(words: Sequence[str]) -> str:
    """Words -> canonical text: the inverse of `pre_tokenize` on canonical text."""
    parts: list[str] = []
    prev = None
    for word in words:
        if prev is not None and not _glued(prev, word):
            parts.append(" ")
        parts.append(word)
        prev = word
    return "".join(parts)


def _glued(prev: str, word: str) -> bool:
    # Runs count by their character: "}}" closes like "}".
    newline = prev.startswith("\n") or word.startswith("\n")
    return newline or word[0] in _NO_SPACE_BEFORE or prev[-1] in _NO_SPACE_AFTER


class WordTokenizer:
    """Words <-> ids with reserved ids pad 0, bos 1, eos 2, sep 3, unk 4.

    `WordTokenizer(words)` takes an explicit vocabulary (ids 5, 6, ... in the given order);
    `WordTokenizer.from_corpus(texts)` counts the words of a corpus.
    """

    pad_id, bos_id, eos_id, sep_id, unk_id = range(len(RESERVED))

    def __init__(self, words: Sequence[str]):
        words = list(words)
        if not words:
            raise ValueError("WordTokenizer needs at least one word besides the reserved tokens")
        seen: set[str] = set()
        for word in words:
            if not isinstance(word, str):
                raise TypeError(f"vocabulary entries must be str, got {word!r}")
            if word in RESERVED:
                raise ValueError(f"{word!r} is reserved (id {RESERVED.index(word)}); drop it")
            if word in seen:
                raise ValueError(f"{word!r} appears twice in the vocabulary")
            # A word the pre-tokenizer can never produce would be dead weight, or a typo.
            if pre_tokenize(word) != [word]:
                raise ValueError(
                    f"{word!r} is not a single word: pre_tokenize gives {pre_tokenize(word)}"
                )
            seen.add(word)
        self.words: tuple[str, ...] = RESERVED + tuple(words)  # id -> word
        self.vocab_size = len(self.words)
        self._ids = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def from_corpus(
        cls, texts: Iterable[str], min_count: int = 1, max_size: int | None = None
    ) -> WordTokenizer:
        """Words ordered by frequency, ties in code-point order; `max_size` caps `vocab_size`
        (reserved ids included); words seen fewer than `min_count` times are left out."""
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        if max_size is not None and max_size <= len(RESERVED):
            raise ValueError(f"max_size must exceed the {len(RESERVED)} reserved ids: {max_size}")
        counts: collections.Counter[str] = collections.Counter()
        for n, text in enumerate(texts):
            words = pre_tokenize(text)
            for word in set(words) & set(RESERVED):
                # Markers in a corpus usually mean decoded output was fed back by mistake.
                raise ValueError(f"corpus text {n} contains the reserved token {word!r}")
            counts.update(words)
        ranked = sorted(
            (w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w)
        )
        if max_size is not None:
            ranked = ranked[: max_size - len(RESERVED)]
        if not ranked:
            raise ValueError(
                f"empty vocabulary: no word occurs at least min_count={min_count} times "
                f"in the corpus ({sum(counts.values())} words read)"
            )
        return cls(ranked)

    def token_to_id(self, token: str) -> int:
        i = self._ids.get(token)
        if i is None:
            raise KeyError(f"{token!r} is not in the vocabulary")
        return i

    def encode(self, text: str) -> list[int]:
        """Text -> ids; unknown words -> `unk_id`. No bos/eos is added."""
        return [self._ids.get(w, self.unk_id) for w in pre_tokenize(text)]

    def unknown_words(self, text: str) -> list[str]:
        """The words of `text` that would encode to unk, in order (to check coverage)."""
        return [w for w in pre_tokenize(text) if w not in self._ids]

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        """Ids -> canonical text. `skip_special` drops pad/bos/eos/sep; unk always shows as
        `<unk>` since it stands for a word that was there."""
        words = []
        for i in ids:
            i = int(i)
            if not 0 <= i < self.vocab_size:
                raise ValueError(f"id {i} is outside the vocabulary [0, {self.vocab_size})")
            if skip_special and i < len(RESERVED) and i != self.unk_id:
                continue
            words.append(self.words[i])
        return join_words(words)

    def encode_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Right-padded to the longest text -> (ids [B, S] int32, valid [B, S] bool)."""
        rows = [self.encode(t) for t in texts]
        width = max((len(r) for r in rows), default=0)
        ids = np.full((len(rows), width), self.pad_id, np.int32)
        valid = np.zeros((len(rows), width), bool)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = r
            valid[i, : len(r)] = True
        return ids, valid

    def save(self, path: str | pathlib.Path) -> None:
        data = {
            "format": FILE_FORMAT,
            "reserved": list(RESERVED),
            "words": list(self.words[len(RESERVED) :]),
        }
        pathlib.Path(path).write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n")

    @classmethod
    def load(cls, path: str | pathlib.Path) -> WordTokenizer:
        data = json.loads(pathlib.Path(path).read_text())
        if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
            raise ValueError(f"{path} is not a word tokenizer file (format {FILE_FORMAT!r})")
        if tuple(data["reserved"]) != RESERVED:
            raise ValueError(f"{path} reserves {data['reserved']}, this code {list(RESERVED)}")
        return cls(data["words"])
