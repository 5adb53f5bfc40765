"""Answer extraction and scoring, as the official `calc_metrics.py` and `evaluation/*.py` do.

Extraction (MCQ and TF): the LAST match of `<ans>(.*?)<eoa>` across newlines, with newlines,
dashes, spaces, tabs and `</ans>` removed. Without a closed tag the official fallback pattern
`<ans>(.*?)` matches the empty string (lazy, nothing after it), so an opened but unclosed tag,
e.g. a truncated answer, gives "" (not "#"). No `<ans>` at all: MCQ predicts "#" (wrong), TF
predicts the whole response (which then rarely equals TRUE/FALSE). Empty responses are left out
of MCQ and TF scores by the official code (`if not text: continue`); `harness.py` counts them.

MCQ rules (the official rule looks at letter counts, never at `_scq`/`_mcq`):
- `lenient` (the spec's reading of `evaluation/mcq.py`): if gold or prediction has more than
  one letter, correct iff set(pred) <= set(gold), so "B" is right for gold "BC", and the empty
  prediction "" is right for every multi-letter gold (pinned in the tests); else exact match.
- `strict`: the letter sets are equal.
- `as_run`: what the official code computes. `calc_mcq_score` calls `eval_mcq(gt_list,
  pred_list)` but the signature is `eval_mcq(predictions, ground_truth)`, so the subset test runs
  the other way: correct iff set(gold) <= set(pred) when either has more than one letter, and
  "ABCD" is right for every item. Reported as a diagnostic column.
TF: exact match after upper() and strip().
"""

from __future__ import annotations

import re

NO_ANSWER = "#"
MCQ_RULES = ("lenient", "strict", "as_run")
_CLOSED = re.compile(r"<ans>(.*?)<eoa>", re.DOTALL)
_REMOVED = ("<ans>", "<eoa>", "\n", "-", " ", "\t", "</ans>")


def _clean(text: str) -> str:
    for s in _REMOVED:
        text = text.replace(s, "")
    return text


def extract(text: str) -> str | None:
    """The cleaned content of the last closed tag; "" for an unclosed `<ans>`; None for none."""
    matches = _CLOSED.findall(text)
    if matches:
        return _clean(matches[-1])
    return "" if "<ans>" in text else None


def mcq_prediction(text: str) -> str:
    found = extract(text)
    return NO_ANSWER if found is None else found


def tf_prediction(text: str) -> str:
    found = extract(text)
    return text if found is None else found


def mcq_correct(pred: str, gold: str, rule: str = "lenient") -> bool:
    if rule == "strict":
        return set(pred) == set(gold)
    if rule not in MCQ_RULES:
        raise ValueError(f"rule={rule!r}: choose from {MCQ_RULES}")
    if len(gold) > 1 or len(pred) > 1:
        return set(pred) <= set(gold) if rule == "lenient" else set(gold) <= set(pred)
    return pred == gold


def tf_correct(pred: str, gold: str) -> bool:
    return pred.upper().strip() == gold.upper().strip()
