"""Steps of a PRM-format solution and their true labels (spec §3, §5).

The spec: shared/papers/prm_biasbench.md of the handbook.

A solution is split into steps on blank lines ("\\n\\n"), as the official code splits responses:
every chunk is one step the PRM scores, the final "Answer: N" chunk included (Reconstruction:
the official recipe scores every chunk of the response, and the answer chunk is its last, so
r_last is the PRM's verdict on the answer; alternative considered: scoring only the equation
steps, which would leave the answer unseen by the PRM and RL free to write any answer).
A perturbation that adds or removes blank lines changes how many steps are scored.

True labels come from the problem, not the text: a step is correct iff every earlier step is
correct and each equation in it (i) holds, (ii) starts from the value written last (the start
number for the first), and (iii) applies the question's next operation and operand. A step
without an equation (filler, a restated question, a bare header) asserts nothing and is correct
iff the earlier steps are. The answer step is correct iff the earlier steps are correct and it
states the problem's true answer. For slips this is `Trace.labels` plus the answer's label.
"""

from __future__ import annotations

import dataclasses
import re

from shared.data.arithmetic_trace_text import parse_equations, split_prm
from shared.data.arithmetic_traces import Problem, Step, evaluate

SEPARATOR = "\n\n"
_HEADER = re.compile(r"Step (\d+): ")
_ANSWER = re.compile(r"Answer: (-?\d+)")


class MalformedTraceError(ValueError):
    """A text that is not a PRM-format solution where one is required."""


def split_steps(text: str) -> list[str]:
    """Every "\\n\\n"-separated chunk, the answer chunk included (what the PRM scores)."""
    if not isinstance(text, str):
        raise TypeError(f"a solution is a str, got {type(text).__name__}")
    if not text.strip():
        raise MalformedTraceError("empty solution: there is no step to score")
    return text.split(SEPARATOR)


@dataclasses.dataclass(frozen=True)
class ParsedTrace:
    """A canonical PRM-format solution: `Step k: a op b = c` blocks, then `Answer: N`."""

    steps: tuple[Step, ...]
    answer: int


def parse_canonical(text: str) -> ParsedTrace:
    """Inverse of `render_prm` for canonical text; raises MalformedTraceError naming the block
    that is not `Step k: a op b = c` (k counting from 1) or a missing/unreadable answer."""
    blocks = split_steps(text)
    *body, last = blocks
    answer = _ANSWER.fullmatch(last)
    if answer is None:
        raise MalformedTraceError(f"the last block must be 'Answer: N', got {last!r}")
    if not body:
        raise MalformedTraceError("no step before the answer")
    steps = []
    for k, block in enumerate(body, 1):
        header = _HEADER.match(block)
        equations = parse_equations(block)
        if header is None or int(header.group(1)) != k or len(equations) != 1:
            raise MalformedTraceError(f"block {k} is not 'Step {k}: a op b = c': {block!r}")
        rendered = f"Step {k}: {equations[0].lhs} {equations[0].op} {equations[0].rhs} = "
        if block != rendered + str(equations[0].written):
            raise MalformedTraceError(f"block {k} has text beyond its equation: {block!r}")
        steps.append(equations[0])
    return ParsedTrace(tuple(steps), int(answer.group(1)))


def render_canonical(steps: list[Step] | tuple[Step, ...], answer: int) -> str:
    blocks = [f"Step {k}: {s.lhs} {s.op} {s.rhs} = {s.written}" for k, s in enumerate(steps, 1)]
    return SEPARATOR.join([*blocks, f"Answer: {answer}"])


def true_labels(problem: Problem, text: str) -> list[int]:
    """One 0/1 label per chunk of `split_steps(text)` (see the module docstring)."""
    blocks = split_steps(text)
    _, answer = split_prm(text)
    labels, ok = [], True
    value, done = problem.start, 0  # the value written last, operations applied so far
    for i, block in enumerate(blocks):
        if i == len(blocks) - 1 and block.startswith("Answer:"):
            ok = ok and answer is not None and answer == evaluate(problem)
            ok = ok and done == len(problem.operations)
        else:
            for eq in parse_equations(block):
                expected = problem.operations[done] if done < len(problem.operations) else None
                ok = ok and eq.holds and eq.lhs == value and (eq.op, eq.rhs) == expected
                value, done = eq.written, done + 1
        labels.append(int(ok))
    return labels


def first_error(labels: list[int]) -> int:
    """Index of the first 0 label, -1 when every step is correct (ProcessBench's convention)."""
    return labels.index(0) if 0 in labels else -1
