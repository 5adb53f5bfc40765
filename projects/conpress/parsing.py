"""Splitting a model's output into per-question segments and reading each boxed answer.

From the paper (spec section 2, step 3): split the output on the "### Qi" markers; in each
segment take the LAST \\boxed{...} (balanced braces); drop the whole output when a marker is
missing, duplicated or out of order. A malformed output is never an exception: `parse_output`
returns `Parsed` with `error` saying why it was dropped, and the run counts it.

Reconstruction (spec-compatible details the paper does not give):
- A marker is "#" x 1-6, optional spaces, "Q" (or "Question"), the number, an optional ":" or
  "." at the start of a line; it takes the newline before it (the separator) and, when nothing
  else follows on its line, the newline after it, so the segments hold exactly the answers.
- A marker numbered outside 1..N is an error ("unexpected"), as a duplicate is.
- Text before the first marker (a preamble) belongs to no segment; it is kept in `preamble`.
- N = 1 (the single-question format) has no markers: the whole output is the segment.
- A segment without a complete \\boxed{} has answer None (wrong, not a parse failure).
"""

from __future__ import annotations

import dataclasses
import re

_MARKER = re.compile(
    r"(?:^|\n)[ \t]*#{1,6}[ \t]*Q(?:uestion)?[ \t]*(\d+)\b[ \t]*[:.]?[ \t]*(?:\n|$)?", re.M
)
_BOXED = re.compile(r"\\boxed\s*\{")


@dataclasses.dataclass(frozen=True)
class Segment:
    start: int  # char offset of the segment in the output (after its marker)
    end: int  # char offset one past its end (the next marker's start, or the output's end)
    text: str  # output[start:end] without surrounding whitespace
    answer: str | None  # content of the last complete \boxed{...}; None when there is none


@dataclasses.dataclass(frozen=True)
class Parsed:
    segments: tuple[Segment, ...]  # one per question in order; () when dropped
    markers: tuple[tuple[int, int], ...]  # char spans of the marker lines found
    error: str | None = None  # why the output was dropped (None: it parsed)
    preamble: str = ""  # text before the first marker (N >= 2)

    @property
    def ok(self) -> bool:
        return self.error is None


def boxed_contents(text: str) -> list[str]:
    """The content of every complete \\boxed{...} in order; braces nest ("\\boxed{\\frac{1}{2}}"
    -> "\\frac{1}{2}"); escaped braces \\{ \\} do not count; an unclosed box is skipped."""
    out = []
    for m in _BOXED.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            c = text[i]
            if c == "\\" and text[i + 1 : i + 2] in ("{", "}"):
                i += 2
                continue
            depth += {"{": 1, "}": -1}.get(c, 0)
            i += 1
        if depth == 0:
            out.append(text[m.end() : i - 1])
    return out


def last_boxed(text: str) -> str | None:
    found = boxed_contents(text)
    return found[-1] if found else None


def _segment(text: str, start: int, end: int) -> Segment:
    body = text[start:end]
    return Segment(start, end, body.strip(), last_boxed(body))


def marker_spans(text: str) -> list[tuple[int, int, int]]:
    """(number, start, end) of every marker line, in order of appearance."""
    return [(int(m.group(1)), m.start(), m.end()) for m in _MARKER.finditer(text)]


def parse_output(text: str, n: int) -> Parsed:
    """An N-question output -> its N segments, or the reason it is dropped (see module doc)."""
    if n < 1:
        raise ValueError(f"n must be >= 1 questions, got {n}")
    if not isinstance(text, str):
        return Parsed((), (), f"output is {type(text).__name__}, not text")
    if n == 1:
        return Parsed((_segment(text, 0, len(text)),), ())
    found = marker_spans(text)
    spans = tuple((s, e) for _, s, e in found)
    numbers = [k for k, _, _ in found]
    error = _marker_error(numbers, n)
    if error:
        return Parsed((), spans, error)
    ends = [s for _, s, _ in found[1:]] + [len(text)]
    segments = tuple(_segment(text, e, end) for (_, _, e), end in zip(found, ends))
    return Parsed(segments, spans, None, text[: found[0][1]])


def _marker_error(numbers: list[int], n: int) -> str | None:
    extra = sorted({k for k in numbers if not 1 <= k <= n})
    if extra:
        return f"unexpected marker(s) {', '.join(f'Q{k}' for k in extra)} for {n} questions"
    dup = sorted({k for k in numbers if numbers.count(k) > 1})
    if dup:
        return f"duplicated marker(s) {', '.join(f'Q{k}' for k in dup)}"
    missing = [k for k in range(1, n + 1) if k not in numbers]
    if missing:
        return f"missing marker(s) {', '.join(f'Q{k}' for k in missing)}"
    if numbers != sorted(numbers):
        return f"markers out of order: {' '.join(f'Q{k}' for k in numbers)}"
    return None
