"""Answer normalization: one canonical string per answer, used by both the correctness filter and
the evaluation (spec section 3: they must be identical), through `answers_match`.

Numbers become exact fractions written "p" or "p/q" in lowest terms, so "42", " 42 ",
"\\boxed{42}", "42.0" and "$42$" are all "42", and "1/2", "\\frac{1}{2}", "\\dfrac12", "0.5" are
all "1/2". Wrappers removed first: \\boxed{}, $...$, \\( \\), \\[ \\], \\left/\\right, thin spaces,
\\text{}/\\mathrm{} (their content kept), a trailing period, thousands commas ("1,000").
Reconstruction (the paper gives no normalizer): a number followed only by a unit word
("8 apples", "8 \\text{apples}") is that number; non-numeric answers keep their text without
whitespace. An empty answer normalizes to None and matches nothing.
"""

from __future__ import annotations

import fractions
import re

from projects.conpress.parsing import boxed_contents

_WRAPPERS = (("$", "$"), ("\\(", "\\)"), ("\\[", "\\]"))
_DROP = re.compile(r"\\left|\\right|\\[!,;: ]|~")
_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox)\s*\{([^{}]*)\}")
_FRAC = re.compile(r"^(-?)\\[dt]?frac\s*(?:\{([^{}]+)\}|(\d))\s*(?:\{([^{}]+)\}|(\d))$")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)$")
_SLASH = re.compile(r"^([-+]?\d+)\s*/\s*([-+]?\d+)$")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_UNIT = re.compile(r"^(\S+)\s+[A-Za-z][A-Za-z ]*$")


def _unwrap(s: str) -> str:
    """Strips outer wrappers until none is left."""
    while True:
        s = s.strip().rstrip(".").strip()
        boxed = boxed_contents(s)
        if len(boxed) == 1 and s.startswith("\\boxed") and s.endswith("}"):
            s = boxed[0]
            continue
        for left, right in _WRAPPERS:
            if len(s) >= len(left) + len(right) and s.startswith(left) and s.endswith(right):
                s = s[len(left) : len(s) - len(right)]
                break
        else:
            if s.startswith("{") and s.endswith("}") and not boxed:
                s = s[1:-1]
                continue
            return s


def _fraction(s: str) -> fractions.Fraction | None:
    """The exact value of an integer, decimal, a/b or \\frac{a}{b}; None otherwise."""
    s = s.replace(" ", "")
    if _THOUSANDS.match(s):
        s = s.replace(",", "")
    if _NUMBER.match(s):
        return fractions.Fraction(s)
    m = _SLASH.match(s)
    if m:
        num, den = int(m.group(1)), int(m.group(2))
        return fractions.Fraction(num, den) if den else None
    m = _FRAC.match(s)
    if m:
        num, den = _fraction(m.group(2) or m.group(3)), _fraction(m.group(4) or m.group(5))
        if num is None or den is None or den == 0:
            return None
        return -(num / den) if m.group(1) else num / den
    return None


def _canonical(value: fractions.Fraction) -> str:
    p, q = value.numerator, value.denominator
    return str(p) if q == 1 else f"{p}/{q}"


def normalize_answer(answer: str | None) -> str | None:
    """The canonical form of an answer string (see the module docstring)."""
    if answer is None:
        return None
    s = _unwrap(answer)
    s = _DROP.sub("", s).strip()
    s = _TEXT.sub(lambda m: f" {m.group(1)} ", s).strip()
    s = _unwrap(s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac"))
    if not s:
        return None
    value = _fraction(s)
    if value is None:  # a number with a unit word after it ("8 apples")
        m = _UNIT.match(s)
        value = _fraction(m.group(1)) if m else None
    return _canonical(value) if value is not None else re.sub(r"\s+", "", s)


def answers_match(predicted: str | None, gold: str | None) -> bool:
    """True iff both normalize to the same non-empty canonical string."""
    a, b = normalize_answer(predicted), normalize_answer(gold)
    return a is not None and a == b
