"""From parsed outputs to SFT pairs: the correctness and length filters (spec section 2, step 3)
and the single-question re-wrapping (step 4).

Every candidate is one question's answer text taken from one sampled output: a segment of an
N-question output (ConPress) or a whole single-question output (the control). The filters never
look at which N it came from, so ConPress and the control pass the same tests.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from projects.conpress.normalize import answers_match
from projects.conpress.prompts import build_prompt


@dataclasses.dataclass(frozen=True)
class Candidate:
    question_id: int  # index into the question pool
    question: str  # the question's text (one line)
    gold: str  # its reference answer
    response: str  # the segment (or single output) without markers, stripped
    answer: str | None  # the last boxed answer in `response`
    tokens: int  # its length in the model's tokens
    n: int  # questions in the prompt it came from (1: single-question)
    truncated: bool = False  # the output hit the token budget before its eos

    @property
    def correct(self) -> bool:
        return answers_match(self.answer, self.gold)


def keep_correct(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The correctness filter: normalize(answer) == normalize(gold)."""
    return [c for c in candidates if c.correct]


def median_lengths(singles: Iterable[Candidate]) -> dict[int, float]:
    """question id -> median token count of its single-question samples (all of them, right or
    wrong; Reconstruction: the spec does not say which samples define the median)."""
    by_q: dict[int, list[int]] = {}
    for c in singles:
        if c.n != 1:
            raise ValueError(f"median_lengths takes single-question samples, got n={c.n}")
        by_q.setdefault(c.question_id, []).append(c.tokens)
    return {q: float(np.median(np.asarray(v, np.float64))) for q, v in by_q.items()}


def keep_shorter(candidates: Iterable[Candidate], medians: Mapping[int, float]) -> list[Candidate]:
    """The length filter: keep a candidate iff it is strictly shorter than the median
    single-question length of its question (a question without single samples is dropped)."""
    return [c for c in candidates if c.question_id in medians and c.tokens < medians[c.question_id]]


def sft_pairs(candidates: Sequence[Candidate]) -> list[tuple[str, str]]:
    """(single-question prompt, response) for each candidate: the training pairs of SFT, always
    in the single-question format whatever N the response was sampled under."""
    return [(build_prompt([c.question]), c.response) for c in candidates]


def subsample(candidates: Sequence[Candidate], k: int, seed: int) -> list[Candidate]:
    """k candidates drawn without replacement (seeded), kept in pool order."""
    if k > len(candidates):
        raise ValueError(f"cannot draw {k} of {len(candidates)} candidates")
    idx = np.sort(np.random.default_rng(seed).choice(len(candidates), k, replace=False))
    return [candidates[i] for i in idx]
