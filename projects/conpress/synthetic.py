"""The synthetic task with multi-question pressure BUILT IN (spec section 5).

Questions are multi-step integer problems of `shared.data.arithmetic_traces` ("Start with 17.
Add 25. ..."), 3-6 operations in distribution, 7-8 in the hard split. A trace lists every step
and inserts redundant `check:` lines (the overthinking analogue), then `\\boxed{answer}`
(`shared.data.arithmetic_trace_text.render_conpress`).

The pressure is a construction, not an emergent effect: in the base model's training data the
outputs of an N-question prompt share ONE budget of check lines. Reconstruction (the spec says
"share a total budget", not how): the number of check lines of a whole output is uniform on
0..max_checks whatever N is, and each check line goes to a uniformly drawn question, so a
question gets max_checks / 2 / N check lines on average (3, 1.5, 0.75, 0.375 for N = 1, 2, 4, 8
with max_checks = 6). Steps are never affected: check lines restate earlier equations and never
change the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from projects.conpress.prompts import MULTI_HEADER, SINGLE_HEADER, build_prompt, join_answers
from shared.data.arithmetic_trace_text import (
    parse_conpress,
    parse_question,
    render_conpress,
    render_question,
    vocabulary,
)
from shared.data.arithmetic_traces import Problem, TraceConfig, evaluate, sample_problem, solve
from shared.data.word_tokenizer import WordTokenizer, pre_tokenize


def split_config(hard: bool, max_value: int = 99) -> TraceConfig:
    """In distribution: 3-6 operations; hard: 7-8 (the spec's AIME25 analogue)."""
    ops = (7, 8) if hard else (3, 6)
    return TraceConfig(min_ops=ops[0], max_ops=ops[1], max_operand=max_value, max_value=max_value)


def check_counts(rng: np.random.Generator, n: int, max_checks: int) -> list[int]:
    """Check lines per question of one N-question output: a total uniform on 0..max_checks,
    each line given to a uniformly drawn question (the shared budget)."""
    total = int(rng.integers(0, max_checks + 1))
    return np.bincount(rng.integers(0, n, size=total), minlength=n).tolist()


def target_text(problems: Sequence[Problem], max_checks: int, rng: np.random.Generator) -> str:
    """The training response to the prompt of `problems`: one trace per question under its
    marker (no markers when there is one question), check lines from the shared budget."""
    counts = check_counts(rng, len(problems), max_checks)
    traces = [render_conpress(solve(p), c, rng) for p, c in zip(problems, counts)]
    return join_answers(traces)


def prompt_text(problems: Sequence[Problem]) -> str:
    return build_prompt([render_question(p) for p in problems])


def gold(problem: Problem) -> str:
    return str(evaluate(problem))


def trace_is_right(question: str, response: str) -> bool:
    """True iff the response's step lines are exactly the question's correct solution (check
    lines aside): a diagnostic the synthetic task allows and the paper's filter does not use,
    since a wrong trace can still end on the right answer."""
    try:
        steps = parse_conpress(response).steps
    except ValueError:
        return False
    return steps == solve(parse_question(question)).steps


def draw_problems(
    rng: np.random.Generator, count: int, cfg: TraceConfig, exclude: set[Problem] = frozenset()
) -> list[Problem]:
    """`count` distinct problems not in `exclude` (held-out sets never repeat a training one)."""
    out: list[Problem] = []
    seen = set(exclude)
    while len(out) < count:
        p = sample_problem(rng, cfg)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def tokenizer(max_value: int = 99, max_n: int = 8) -> WordTokenizer:
    """Every word of the prompts, traces and markers (numbers 0..max(max_value, 8))."""
    words = vocabulary(split_config(True, max_value))
    extra = pre_tokenize(" ".join([SINGLE_HEADER, MULTI_HEADER, "###"]))
    extra += [f"Q{i}" for i in range(1, max_n + 1)]
    return WordTokenizer(list(dict.fromkeys([*words, *extra])))


@dataclasses.dataclass(frozen=True)
class Example:
    prompt: str
    response: str


def training_examples(
    rng: np.random.Generator, questions: int, ns: Sequence[int], max_checks: int, max_value: int
) -> list[Example]:
    """Base-model training data: `questions` in-distribution questions split equally among the
    prompt sizes `ns` (so each N gets the same number of questions), grouped into prompts of N,
    shuffled."""
    cfg = split_config(False, max_value)
    per_n = questions // len(ns)
    examples = []
    for n in ns:
        for _ in range(per_n // n):
            problems = [sample_problem(rng, cfg) for _ in range(n)]
            examples.append(Example(prompt_text(problems), target_text(problems, max_checks, rng)))
    order = rng.permutation(len(examples))
    return [examples[i] for i in order]
