"""Per-question token counts of an output, in the model's own tokens (spec section 3).

A generated token belongs to the part of the output where its first non-blank character sits:
a marker line, question i's segment, or neither (a preamble before the first marker). So the
counts always add up: sum(segments) + markers + other == number of output tokens (the prompt and
the eos are never counted). A token that straddles a boundary counts once, where it starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from projects.conpress.parsing import Parsed

Decode = Callable[[Sequence[int]], str]


def token_spans(ids: Sequence[int], decode: Decode) -> tuple[str, list[tuple[int, int]]]:
    """(text, char span of each token in it). Each token's own text is looked up in order; when
    that fails (a byte-level token that is half a character) every prefix is decoded instead."""
    ids = [int(i) for i in ids]
    text = decode(ids)
    spans, pos = [], 0
    for i in ids:
        piece = decode([i])
        at = text.find(piece, pos) if piece else pos
        if at < 0 or (piece.strip() and text[pos:at].strip()):
            return text, _prefix_spans(ids, decode)
        spans.append((at, at + len(piece)))
        pos = at + len(piece)
    return text, spans


def _prefix_spans(ids: list[int], decode: Decode) -> list[tuple[int, int]]:
    spans, prev = [], 0
    for k in range(1, len(ids) + 1):
        end = len(decode(ids[:k]))
        spans.append((prev, max(prev, end)))
        prev = max(prev, end)
    return spans


@dataclasses.dataclass(frozen=True)
class TokenCounts:
    segments: tuple[int, ...]  # tokens of each question's segment (empty when not parsed)
    markers: int  # tokens of the marker lines
    other: int  # tokens in no segment and no marker (a preamble)
    total: int  # every output token


def count_tokens(text: str, spans: Sequence[tuple[int, int]], parsed: Parsed) -> TokenCounts:
    """Assigns each token (char span in `text`) to a marker, a segment or neither."""
    seg = [0] * len(parsed.segments)
    markers = other = 0
    for start, end in spans:
        first = start + len(text[start:end]) - len(text[start:end].lstrip())
        first = start if first >= end else first  # an all-blank token: where it starts
        if any(s <= first < e for s, e in parsed.markers):
            markers += 1
            continue
        owner = next((k for k, g in enumerate(parsed.segments) if g.start <= first < g.end), None)
        if owner is None:
            other += 1
        else:
            seg[owner] += 1
    return TokenCounts(tuple(seg), markers, other, len(spans))
