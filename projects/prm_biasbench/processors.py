"""PRM input processors: (question, solution) -> token ids with one step tag after every step.

Each PRM has its own step-score extraction (spec §3): the solution is split on "\\n\\n"
(`steps.split_steps`), every chunk is encoded on its own and followed by the model's step tag, and
the PRM's score for step k is read at the k-th tag (as Math-Shepherd reads its "ки" tags).
- decoder PRM (word tokenizer): `<bos> question <sep> step_1 \\n\\n ... step_K \\n\\n`;
  the tag is the "\\n\\n" word itself, and causal attention makes r_k depend on steps 1..k only.
- MiniLM PRM (WordPiece): `[CLS] question [SEP] step_1 [SEP] ... step_K [SEP]`, token type 0 for
  the question and 1 for the steps; `blocks` numbers the chunk of every token (0: the question)
  for the block-causal attention mask (prm_models.py).
Reconstruction: the tags and the MiniLM layout are ours (alternative considered: a single [SEP]
with step scores read at each step's last word, which leaves the first step and its boundary
ambiguous when a step is empty).

A prompt longer than the model's context is refused, never truncated.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from projects.prm_biasbench.steps import split_steps
from shared.data.tokenizers import HFTokenizer
from shared.data.word_tokenizer import WordTokenizer

BUCKET = 16  # widths are padded to a multiple of this, so jit compiles few shapes


@dataclasses.dataclass(frozen=True)
class Encoded:
    """One (question, solution) pair as the PRM sees it."""

    ids: np.ndarray  # [S] int32
    blocks: np.ndarray  # [S] int32: 0 for the question part, k for step k and its tag
    types: np.ndarray  # [S] int32 token types (MiniLM; zeros for the decoder)
    ends: np.ndarray  # [K] int32: the position of each step's tag


class Processor:
    """Shared encoding logic; subclasses set the tokens around the question and the tag."""

    max_len: int  # the model's context: a longer prompt is refused
    tag_id: int  # the step tag written after every step
    pad_id: int = 0
    step_type: int = 0  # token type of the solution part (MiniLM: 1, the second segment)

    def _encode_text(self, text: str) -> list[int]:
        raise NotImplementedError

    def _head(self, question: str) -> list[int]:
        raise NotImplementedError

    def encode(self, question: str, solution: str) -> Encoded:
        head = self._head(question)
        ids, blocks, ends = list(head), [0] * len(head), []
        for k, chunk in enumerate(split_steps(solution), 1):
            piece = [*self._encode_text(chunk), self.tag_id]
            ids += piece
            blocks += [k] * len(piece)
            ends.append(len(ids) - 1)
        if len(ids) > self.max_len:
            raise ValueError(
                f"the prompt has {len(ids)} tokens, more than the PRM's context of "
                f"{self.max_len}; shorten the solution or raise the model's max length"
            )
        types = np.where(np.asarray(blocks) > 0, self.step_type, 0).astype(np.int32)
        return Encoded(
            np.asarray(ids, np.int32), np.asarray(blocks, np.int32), types, np.asarray(ends)
        )


class DecoderProcessor(Processor):
    def __init__(self, tokenizer: WordTokenizer, max_len: int):
        self.tokenizer, self.max_len = tokenizer, max_len
        self.tag_id = tokenizer.token_to_id("\n\n")
        self.pad_id = tokenizer.pad_id

    def _encode_text(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)

    def _head(self, question: str) -> list[int]:
        t = self.tokenizer
        return [t.bos_id, *t.encode(question), t.sep_id]


class MiniLMProcessor(Processor):
    step_type = 1

    def __init__(self, tokenizer: HFTokenizer, max_len: int):
        self.tokenizer, self.max_len = tokenizer, max_len
        self.tag_id = tokenizer.token_to_id("[SEP]")
        self.cls_id = tokenizer.token_to_id("[CLS]")
        self.pad_id = tokenizer.pad_id

    def _encode_text(self, text: str) -> list[int]:
        # Without [CLS]/[SEP] and without truncation: the length check above sees everything.
        return self.tokenizer.tok.encode(text, add_special_tokens=False).ids

    def _head(self, question: str) -> list[int]:
        return [self.cls_id, *self._encode_text(question), self.tag_id]


def padded_width(n: int) -> int:
    return -(-n // BUCKET) * BUCKET


def collate(
    rows: Sequence[Encoded], pad_id: int, width: int | None = None, steps: int | None = None
) -> dict[str, np.ndarray]:
    """Right-padded batch: ids, blocks, types [B, S]; valid [B, S]; ends, ends_valid [B, K].
    `width`/`steps` default to the batch's longest, rounded up to BUCKET / exact."""
    longest = max(len(r.ids) for r in rows)
    width = padded_width(longest) if width is None else width
    steps = max(len(r.ends) for r in rows) if steps is None else steps
    if longest > width or max(len(r.ends) for r in rows) > steps:
        raise ValueError(f"a row exceeds the batch shape (width {width}, steps {steps})")
    b = len(rows)
    out = {
        "ids": np.full((b, width), pad_id, np.int32),
        "blocks": np.full((b, width), -1, np.int32),  # padding belongs to no block
        "types": np.zeros((b, width), np.int32),
        "valid": np.zeros((b, width), bool),
        "ends": np.zeros((b, steps), np.int32),
        "ends_valid": np.zeros((b, steps), bool),
    }
    for i, r in enumerate(rows):
        n, k = len(r.ids), len(r.ends)
        out["ids"][i, :n], out["blocks"][i, :n], out["types"][i, :n] = r.ids, r.blocks, r.types
        out["valid"][i, :n] = True
        out["ends"][i, :k], out["ends_valid"][i, :k] = r.ends, True
    return out
