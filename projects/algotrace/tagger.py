"""The rule-based step tagger of navigation traces (fixed before any steering result was seen).

A trace is the word list after the prompt's ":". A step starts at "at" and ends after ";" (or at
"check", "<eos>" or the next "at"). Its type is decided by the first step word in it:
"go" -> "path" (path generation), "back" -> "back" (backtracking), "check" -> "check"
(verification); a step with none of them, or with words out of the pattern
"at X nb Y... (go|back) Z ;" / "at X nb Y... check", is "other". Every token of a step gets the
step's label; tokens after "<eos>" are "after_end".
"""

from __future__ import annotations

import dataclasses

from projects.algotrace.tasks import NODES

LABELS = ("path", "check", "back", "other")
_KIND = {"go": "path", "back": "back", "check": "check"}


@dataclasses.dataclass(frozen=True)
class Step:
    label: str  # one of LABELS
    at: str  # the node named after "at" ("" if missing)
    neighbours: tuple[str, ...]
    dest: str  # destination of go/back ("" otherwise)
    start: int  # token index of the step's first word
    end: int  # one past its last word


def split_steps(words: list[str]) -> list[Step]:
    """Steps of a trace, up to its "<eos>" (excluded)."""
    if "<eos>" in words:
        words = words[: words.index("<eos>")]
    starts = [i for i, w in enumerate(words) if w == "at"]
    if not starts or starts[0] != 0:
        starts = [0, *starts]
    steps = []
    for k, s in enumerate(starts):
        e = starts[k + 1] if k + 1 < len(starts) else len(words)
        steps.append(_parse(words[s:e], s, e))
    return steps


def _parse(w: list[str], start: int, end: int) -> Step:
    kinds = [x for x in w if x in _KIND]
    label = _KIND[kinds[0]] if kinds else "other"
    at = w[1] if len(w) > 1 and w[0] == "at" and w[1] in NODES else ""
    ok = bool(at) and len(w) > 2 and w[2] == "nb"
    j = 3
    while j < len(w) and w[j] in NODES:
        j += 1
    nbs = tuple(w[3:j]) if ok else ()
    dest = ""
    if ok and label in ("path", "back"):
        tail = w[j:]
        ok = len(tail) == 3 and tail[0] in ("go", "back") and tail[1] in NODES and tail[2] == ";"
        dest = tail[1] if ok else ""
    elif ok and label == "check":
        ok = w[j:] == ["check"]
    return Step(label if ok else "other", at, nbs, dest, start, end)


def token_labels(words: list[str]) -> list[str]:
    """One label per word of the trace (see the module docstring)."""
    out = ["after_end"] * len(words)
    for step in split_steps(words):
        out[step.start : step.end] = [step.label] * (step.end - step.start)
    return out


def count_steps(words: list[str]) -> dict[str, int]:
    steps = split_steps(words)
    return {label: sum(s.label == label for s in steps) for label in LABELS}


def generated_length(words: list[str]) -> int:
    """Tokens generated up to and including <eos> (all of them without one)."""
    return words.index("<eos>") + 1 if "<eos>" in words else len(words)


def path_valid(words: list[str], edges, start: str) -> bool:
    """Every move (go/back) runs along an existing edge, each step is at the node the previous
    move reached (the first at `start`), and no step is "other"."""
    und = {frozenset(e) for e in edges}
    cur = start
    for step in split_steps(words):
        if step.label == "other" or step.at != cur:
            return False
        if step.label in ("path", "back"):
            if frozenset((step.at, step.dest)) not in und:
                return False
            cur = step.dest
    return True


def task_success(words: list[str], edges, start: str, target: str) -> bool:
    """A valid path whose last step is a check at the target, ended by <eos>, with no earlier
    check."""
    if "<eos>" not in words or not path_valid(words, edges, start):
        return False
    steps = split_steps(words)
    checks = [s for s in steps if s.label == "check"]
    return (
        bool(steps) and steps[-1].label == "check" and len(checks) == 1 and steps[-1].at == target
    )
