"""One benchmark item, whatever its source (SafeSci-mini or the published files).

Kinds follow the official harness: `scq` single-answer and `mcq` multi-answer multiple choice
(official `source_file` suffixes `_scq` / `_mcq`; easy to invert: m = multi), `tf` true/false,
and two free-form kinds scored by the refusal detector: `risk` (a refusal is the safe answer)
and `benign` (a harmless request; a refusal there is over-refusal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

KINDS = ("scq", "mcq", "tf", "risk", "benign")
TAGGED = ("scq", "mcq", "tf")  # answered between <ans> and <eoa>
LETTERS = "ABCDEFGHIJ"  # the official prompts allow up to ten options
TF_ANSWERS = ("True", "False")


@dataclasses.dataclass(frozen=True)
class Item:
    kind: str  # one of KINDS
    question: str  # one line (the official prompts end it with ".")
    options: tuple[str, ...] = ()  # scq/mcq: option texts in letter order A, B, ...
    gold: str = ""  # scq/mcq: gold letters, sorted ("BC"); tf: "True"/"False"; else ""
    category: str = ""  # template family or the official `category`
    entity: str = ""  # the compound (SafeSci-mini's split key) or the official source file

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Item.kind={self.kind!r}: choose from {KINDS}")
        if self.kind in ("scq", "mcq"):
            letters = LETTERS[: len(self.options)]
            if len(self.options) < 2 or not self.gold or set(self.gold) - set(letters):
                raise ValueError(
                    f"{self.kind} item {self.question!r}: gold {self.gold!r} must be letters "
                    f"of its {len(self.options)} options ({letters})"
                )
            if self.gold != "".join(sorted(set(self.gold))):
                raise ValueError(f"gold {self.gold!r} must be distinct letters in order")
            if self.kind == "scq" and len(self.gold) != 1:
                raise ValueError(f"scq item {self.question!r} has gold {self.gold!r}: one letter")
        elif self.kind == "tf" and self.gold not in TF_ANSWERS:
            raise ValueError(f"tf item {self.question!r}: gold {self.gold!r} not in {TF_ANSWERS}")

    @property
    def letters(self) -> str:
        return LETTERS[: len(self.options)]


def lettered(
    answers: Sequence[str], distractors: Sequence[str], rng: np.random.Generator
) -> tuple[tuple[str, ...], str]:
    """Shuffles gold `answers` among `distractors` -> (options in letter order, sorted gold
    letters), as the official `list_to_options` does (there with Python's unseeded random)."""
    options = list(answers) + list(distractors)
    if len(set(options)) != len(options):
        raise ValueError(f"options repeat: {options}")
    if len(options) > len(LETTERS):
        raise ValueError(f"{len(options)} options: at most {len(LETTERS)}")
    order = rng.permutation(len(options))
    shuffled = tuple(options[i] for i in order)
    gold = "".join(sorted(LETTERS[shuffled.index(a)] for a in answers))
    return shuffled, gold
