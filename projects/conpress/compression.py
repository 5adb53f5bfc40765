"""The compression ratio r(N) (spec section 2, "Measures"), in float64.

r(N) = E[tokens per question | N-question prompt] / E[tokens | single-question prompt], a ratio
of means over the same (question, sample) pairs in both settings. Two sets are reported:
- `correct`: pairs answered correctly in both settings (the spec's definition);
- `all`: pairs whose N-question output parsed (a dropped output has no per-question tokens).
Sample j of a question under N = 1 is paired with sample j of it under N. Passing the
single-question arrays as the N-question ones gives r = 1 exactly (N = 1).
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Ratio:
    correct: float  # over pairs correct in both settings (nan when there are none)
    all: float  # over pairs whose N-question output parsed (nan when there are none)
    pairs_correct: int  # how many pairs the `correct` ratio averages
    pairs_all: int


def _ratio(num: np.ndarray, den: np.ndarray) -> float:
    if num.size == 0 or den.sum() == 0:
        return float("nan")
    return float(num.sum() / den.sum())


def compression_ratio(
    single_tokens: np.ndarray,
    single_correct: np.ndarray,
    multi_tokens: np.ndarray,
    multi_correct: np.ndarray,
    multi_parsed: np.ndarray,
) -> Ratio:
    """All arrays [questions, samples]: tokens of each question's answer (single) or segment
    (multi), its correctness, and whether the multi-question output it came from parsed (its
    tokens are ignored where it did not)."""
    arrays = [single_tokens, single_correct, multi_tokens, multi_correct, multi_parsed]
    shapes = {np.shape(a) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all arrays must have one shape [questions, samples], got {shapes}")
    st, mt = np.asarray(single_tokens, np.float64), np.asarray(multi_tokens, np.float64)
    parsed = np.asarray(multi_parsed, bool)
    both = parsed & np.asarray(single_correct, bool) & np.asarray(multi_correct, bool)
    return Ratio(
        correct=_ratio(mt[both], st[both]),
        all=_ratio(mt[parsed], st[parsed]),
        pairs_correct=int(both.sum()),
        pairs_all=int(parsed.sum()),
    )


def token_reduction(tokens: float, base_tokens: float) -> float:
    """1 - E[tokens | fine-tuned, single] / E[tokens | base, single] (spec section 2)."""
    return float(1.0 - np.float64(tokens) / np.float64(base_tokens))
