"""Seeded 1-2-step arithmetic word problems for the real-model probe (SmolLM2-135M-Instruct).

Reconstruction: the spec asks for "1-2-step arithmetic word problems" and names no set; these
are six templates (three of one step: +, -, x; three of two steps), small numbers, and a
non-negative integer answer, one line each so they fit the multi-question prompt.
"""

from __future__ import annotations

import dataclasses

import numpy as np

NAMES = ("Tom", "Anna", "Ben", "Lucy", "Sam", "Mia", "Leo", "Emma")
ITEMS = ("apples", "pencils", "stickers", "books", "marbles", "cookies", "stamps", "coins")


@dataclasses.dataclass(frozen=True)
class WordProblem:
    text: str
    answer: int
    steps: int  # 1 or 2


def _one_step(rng: np.random.Generator, name: str, item: str) -> WordProblem:
    kind = int(rng.integers(3))
    if kind == 0:
        a, b = rng.integers(2, 30, size=2)
        text = f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?"
        return WordProblem(text, int(a + b), 1)
    if kind == 1:
        a = int(rng.integers(5, 40))
        b = int(rng.integers(1, a))
        text = f"{name} has {a} {item} and gives away {b}. How many {item} are left?"
        return WordProblem(text, a - b, 1)
    a, b = rng.integers(2, 10, size=2)
    text = f"A box holds {a} {item}. How many {item} are in {b} boxes?"
    return WordProblem(text, int(a * b), 1)


def _two_step(rng: np.random.Generator, name: str, item: str) -> WordProblem:
    kind = int(rng.integers(3))
    if kind == 0:
        a, b = (int(x) for x in rng.integers(2, 30, size=2))
        c = int(rng.integers(1, a + b))
        text = (
            f"{name} has {a} {item}, buys {b} more and then gives away {c}. "
            f"How many {item} does {name} have now?"
        )
        return WordProblem(text, a + b - c, 2)
    a, b = (int(x) for x in rng.integers(2, 10, size=2))
    if kind == 1:
        c = int(rng.integers(1, a * b))
        text = f"There are {a} bags with {b} {item} each. {c} {item} are lost. How many are left?"
        return WordProblem(text, a * b - c, 2)
    c = int(rng.integers(1, 20))
    text = f"{name} buys {a} packs of {b} {item} and finds {c} more. How many {item} are there?"
    return WordProblem(text, a * b + c, 2)


def sample_word_problems(count: int, seed: int) -> list[WordProblem]:
    """`count` distinct problems, half of one step and half of two (alternating)."""
    rng = np.random.default_rng(seed)
    out, seen = [], set()
    while len(out) < count:
        name, item = NAMES[int(rng.integers(len(NAMES)))], ITEMS[int(rng.integers(len(ITEMS)))]
        p = (_one_step if len(out) % 2 == 0 else _two_step)(rng, name, item)
        if p.text not in seen:
            seen.add(p.text)
            out.append(p)
    return out
