"""Text formats of arithmetic traces (`arithmetic_traces.py`): render, parse, label, vocabulary.

All formats are canonical for `WordTokenizer` (decode(encode(text)) == text), built from the words
of `vocabulary(cfg)` only:
question  "Start with 17. Add 25. Subtract 8. Multiply by 2."
PRM       "Step 1: 17 + 25 = 42\\n\\nStep 2: 42 - 8 = 34\\n\\nStep 3: 34 * 2 = 68\\n\\nAnswer: 68"
          (../papers/prm_biasbench.md: steps split on blank lines, then the answer block)
ConPress  "step: 17 + 25 = 42\\ncheck: 17 + 25 = 42\\nstep: 42 - 8 = 34\\nstep: 34 * 2 = 68\\n"
          "\\\\boxed{68}"  (../papers/conpress.md: one line per step, `check:` lines restate an
          equation already written above them, the answer boxed on the last line)
No text ends with a newline. Parsers accept negative numbers, which edited (perturbed) text may
contain even though the generator never writes one.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from shared.data.arithmetic_traces import Problem, Step, Trace, TraceConfig, labels_of

_QUESTION_VERBS = {"+": "Add {}.", "-": "Subtract {}.", "*": "Multiply by {}."}
_QUESTION_OPS = {"Add": "+", "Subtract": "-", "Multiply by": "*"}
FORMAT_WORDS = (
    *("Start", "with", "Add", "Subtract", "Multiply", "by", "."),  # question
    *("Step", ":", "+", "-", "*", "=", "Answer", "\n\n"),  # PRM
    *("step", "check", "\\boxed", "{", "}", "\n"),  # ConPress
)
_EQUATION = re.compile(r"(-?\d+)\s*([-+*])\s*(-?\d+)\s*=\s*(-?\d+)")
_OPERATION = re.compile(r"(Add|Subtract|Multiply by) (\d+)\.")


def vocabulary(cfg: TraceConfig) -> list[str]:
    """Every word the renderers can emit for problems of `cfg`: the format words, then the numbers
    0..cfg.max_number (results stay within it, also after a slip). Feeds `WordTokenizer`."""
    return [*FORMAT_WORDS, *(str(n) for n in range(cfg.max_number + 1))]


def render_question(problem: Problem) -> str:
    ops = (_QUESTION_VERBS[op].format(b) for op, b in problem.operations)
    return " ".join([f"Start with {problem.start}.", *ops])


def parse_question(text: str) -> Problem:
    """Inverse of `render_question`."""
    head = re.match(r"Start with (\d+)\.", text)
    if head is None:
        raise ValueError(f"not a question (expected 'Start with N.'): {text!r}")
    rest = text[head.end() :].strip()
    operations = [(_QUESTION_OPS[verb], int(b)) for verb, b in _OPERATION.findall(rest)]
    if " ".join(_QUESTION_VERBS[op].format(b) for op, b in operations) != rest:
        raise ValueError(f"unreadable operations after 'Start with N.': {rest!r}")
    return Problem(int(head.group(1)), tuple(operations))


def _equation(step: Step) -> str:
    return f"{step.lhs} {step.op} {step.rhs} = {step.written}"


def render_prm(trace: Trace) -> str:
    blocks = [f"Step {k}: {_equation(s)}" for k, s in enumerate(trace.steps, 1)]
    return "\n\n".join([*blocks, f"Answer: {trace.answer}"])


def render_conpress(trace: Trace, n_checks: int = 0, rng: np.random.Generator | None = None) -> str:
    """Steps, `n_checks` redundant check lines, then the boxed answer. Each check goes after a
    uniformly drawn step k and restates a uniformly drawn step among 1..k (written as it was)."""
    if n_checks < 0:
        raise ValueError(f"n_checks must be >= 0, got {n_checks}")
    if n_checks and rng is None:
        raise ValueError("render_conpress needs an rng to place check lines")
    checks: list[list[str]] = [[] for _ in trace.steps]
    for _ in range(n_checks):
        after = int(rng.integers(len(trace.steps)))
        restated = trace.steps[int(rng.integers(after + 1))]
        checks[after].append(f"check: {_equation(restated)}")
    lines = []
    for step, step_checks in zip(trace.steps, checks):
        lines += [f"step: {_equation(step)}", *step_checks]
    return "\n".join([*lines, f"\\boxed{{{trace.answer}}}"])


def _step(match: re.Match) -> Step:
    a, op, b, c = match.groups()
    return Step(int(a), op, int(b), int(c))


def parse_equations(text: str) -> list[Step]:
    """Every `a op b = c` in `text`, in order (`op` one of + - *)."""
    return [_step(m) for m in _EQUATION.finditer(text)]


def split_prm(text: str) -> tuple[list[str], int | None]:
    """PRM-format text -> (step blocks, answer). Blocks are the "\\n\\n"-separated chunks, as a
    plain split gives them (extra blank lines make empty blocks); a last chunk "Answer: N" is the
    answer, not a step (None when it is missing or not an integer)."""
    blocks = text.split("\n\n")
    if blocks[-1].startswith("Answer:"):
        answer = re.fullmatch(r"Answer:\s*(-?\d+)\s*", blocks.pop())
        return blocks, int(answer.group(1)) if answer else None
    return blocks, None


def label_steps(text: str, chained: bool = False) -> list[int]:
    """One label per step block of PRM-format text, from the text alone: 1 iff every equation in
    the block holds and every earlier block is correct. A block without an equation (filler)
    asserts nothing, so it is correct iff the earlier blocks are.
    `chained=True` also requires each block's first left operand to equal the result written last
    in the blocks before it (catches skipped steps and contradictions that are arithmetic-true)."""
    labels, ok, previous = [], True, None
    for block in split_prm(text)[0]:
        equations = parse_equations(block)
        ok = ok and all(e.holds for e in equations)
        if chained and equations and previous is not None:
            ok = ok and equations[0].lhs == previous
        previous = equations[-1].written if equations else previous
        labels.append(int(ok))
    return labels


@dataclasses.dataclass(frozen=True)
class ConPressSolution:
    steps: tuple[Step, ...]  # the `step:` lines
    checks: tuple[Step, ...]  # the `check:` lines
    answer: int  # the last boxed integer

    @property
    def labels(self) -> list[int]:
        return labels_of(self.steps)


def parse_conpress(text: str) -> ConPressSolution:
    """Inverse of `render_conpress` (up to where the checks sat). Raises ValueError on a line that
    is not `step: a op b = c`, `check: a op b = c` or `\\boxed{N}`, or when no box is present."""
    steps, checks, answers = [], [], []
    for n, line in enumerate(text.split("\n")):
        kind, _, rest = line.partition(": ")
        equation = _EQUATION.fullmatch(rest)
        boxed = re.fullmatch(r"\\boxed\{(-?\d+)\}", line)
        if kind in ("step", "check") and equation:
            (steps if kind == "step" else checks).append(_step(equation))
        elif boxed:
            answers.append(int(boxed.group(1)))
        else:
            raise ValueError(f"line {n} is not a step, check or boxed answer: {line!r}")
    if not answers:
        raise ValueError(f"no \\boxed{{N}} answer in {text!r}")
    return ConPressSolution(tuple(steps), tuple(checks), answers[-1])
