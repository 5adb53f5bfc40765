"""Seeded multi-step integer arithmetic problems, their step-by-step solutions, and slips.

One generator for two projects (ConPress: ../papers/conpress.md section 5; PRM-BiasBench:
../papers/prm_biasbench.md section 5). Text formats live in `arithmetic_trace_text.py`.

A problem is a start number and `min_ops..max_ops` operations (+, -, *), asked as
"Start with 17. Add 25. Subtract 8. Multiply by 2." Bounds that every drawn problem obeys:
- the start and every operand lie in [0, max_operand]; every result lies in [0, max_value];
- operands are drawn so that the bounds hold: `a + b` with 1 <= b <= max_value - a,
  `a - b` with 1 <= b <= a (so a result can be 0), `a * b` with a >= 1 and
  2 <= b <= max_value // a; +0, -0, *1 and 0*b never occur (no-op steps), nor *0 (it would erase
  the history). The operation is uniform among those with a legal operand, the operand uniform in
  its range; from any value in [0, max_value] + or - is legal.
A slip (`with_slip`) writes one step's result off by a nonzero offset in [-max_slip, max_slip];
later steps keep the problem's operations and operands and are computed from the wrong value, so
only the slipped step's arithmetic fails. Offsets whose chain would leave [0, max_value] are not
drawn. Every drawn operation is injective in its left operand (no *0), so a slip always changes
the final answer.
Step labels: a step is correct (1) iff its arithmetic holds and every earlier step is correct.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

OPS = ("+", "-", "*")


def apply_op(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    raise ValueError(f"unknown operation {op!r}; expected one of {OPS}")


@dataclasses.dataclass(frozen=True)
class TraceConfig:
    min_ops: int = 3  # fewest operations per problem (inclusive)
    max_ops: int = 6  # most operations per problem (inclusive); the hard split uses 7-8
    max_operand: int = 99  # the start number and every operand lie in [0, max_operand]
    max_value: int = 99  # every result, also after a slip, lies in [0, max_value]
    ops: tuple[str, ...] = OPS  # the operations drawn from
    max_slip: int = 3  # a slip's offset is drawn from [-max_slip, -1] u [1, max_slip]

    def __post_init__(self):
        if not 1 <= self.min_ops <= self.max_ops:
            raise ValueError(f"need 1 <= min_ops <= max_ops, got {self.min_ops}, {self.max_ops}")
        if self.max_operand < 2 or self.max_value < 2:
            raise ValueError(
                f"max_operand and max_value must be >= 2, got {self.max_operand}, {self.max_value}"
            )
        if not self.ops or set(self.ops) - set(OPS) or len(set(self.ops)) != len(self.ops):
            raise ValueError(f"ops must be distinct entries of {OPS}, got {self.ops}")
        if not {"+", "-"} <= set(self.ops):
            # Without both, a walk can reach 0 or max_value and have no legal next operation.
            raise ValueError(f"ops must contain + and -, got {self.ops}")
        if self.max_slip < 1:
            raise ValueError(f"max_slip must be >= 1, got {self.max_slip}")

    @property
    def max_number(self) -> int:
        """The largest number any problem or solution text contains (step indices included)."""
        return max(self.max_operand, self.max_value, self.max_ops)


IN_DISTRIBUTION = TraceConfig()  # 3-6 operations (the MATH500 analogue)
HARD = TraceConfig(min_ops=7, max_ops=8)  # longer than anything in training (the AIME25 analogue)


@dataclasses.dataclass(frozen=True)
class Problem:
    start: int
    operations: tuple[tuple[str, int], ...]  # (op, operand) in order


@dataclasses.dataclass(frozen=True)
class Step:
    """One written equation `lhs op rhs = written`."""

    lhs: int
    op: str
    rhs: int
    written: int  # the result as written, possibly wrong

    @property
    def true_result(self) -> int:
        return apply_op(self.op, self.lhs, self.rhs)

    @property
    def holds(self) -> bool:
        return self.written == self.true_result


def labels_of(steps: Sequence[Step]) -> list[int]:
    """1 for a step whose arithmetic holds and whose earlier steps are all correct, else 0."""
    labels, ok = [], True
    for step in steps:
        ok = ok and step.holds
        labels.append(int(ok))
    return labels


@dataclasses.dataclass(frozen=True)
class Trace:
    problem: Problem
    steps: tuple[Step, ...]  # one per operation; steps[k].lhs == steps[k-1].written
    slip_index: int | None = None  # the 0-based step whose result was written wrong, if any

    def __post_init__(self):
        ops = tuple((s.op, s.rhs) for s in self.steps)
        lhs = tuple(s.lhs for s in self.steps)
        chain = (self.problem.start,) + tuple(s.written for s in self.steps[:-1])
        if not self.steps or ops != self.problem.operations or lhs != chain:
            raise ValueError(f"steps {self.steps} do not follow the operations of {self.problem}")

    @property
    def answer(self) -> int:
        """The final answer as written (wrong after a slip)."""
        return self.steps[-1].written

    @property
    def labels(self) -> list[int]:
        return labels_of(self.steps)


def evaluate(problem: Problem) -> int:
    """The correct final answer."""
    value = problem.start
    for op, operand in problem.operations:
        value = apply_op(op, value, operand)
    return value


def operand_range(value: int, op: str, cfg: TraceConfig) -> range:
    """The operands `b` for which `value op b` is drawn (empty: `op` is not allowed here)."""
    if op == "+":
        return range(1, min(cfg.max_operand, cfg.max_value - value) + 1)
    if op == "-":
        return range(1, min(cfg.max_operand, value) + 1)
    if op == "*":
        return range(2, min(cfg.max_operand, cfg.max_value // value) + 1 if value else 0)
    raise ValueError(f"unknown operation {op!r}; expected one of {OPS}")


def _as_rng(rng: np.random.Generator | int) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def sample_problem(rng: np.random.Generator | int, cfg: TraceConfig = IN_DISTRIBUTION) -> Problem:
    """A random problem; `rng` is a numpy Generator (advanced in place) or an int seed."""
    rng = _as_rng(rng)
    n_ops = int(rng.integers(cfg.min_ops, cfg.max_ops + 1))
    value = start = int(rng.integers(0, min(cfg.max_operand, cfg.max_value) + 1))
    operations = []
    for _ in range(n_ops):
        legal = [op for op in cfg.ops if operand_range(value, op, cfg)]  # + or - always is
        op = legal[int(rng.integers(len(legal)))]
        operands = operand_range(value, op, cfg)
        operand = int(operands[int(rng.integers(len(operands)))])
        operations.append((op, operand))
        value = apply_op(op, value, operand)
    return Problem(start, tuple(operations))


def solve(problem: Problem) -> Trace:
    """The correct trace: one step per operation."""
    steps, value = [], problem.start
    for op, operand in problem.operations:
        result = apply_op(op, value, operand)
        steps.append(Step(value, op, operand, result))
        value = result
    return Trace(problem, tuple(steps))


def sample_trace(rng: np.random.Generator | int, cfg: TraceConfig = IN_DISTRIBUTION) -> Trace:
    return solve(sample_problem(rng, cfg))


def _slipped_steps(
    trace: Trace, index: int, offset: int, max_value: int
) -> tuple[Step, ...] | None:
    """The steps with step `index` written off by `offset` and later steps following it, or None
    when a written number would leave [0, max_value]."""
    steps = list(trace.steps[:index])
    slipped = trace.steps[index]
    value = slipped.true_result + offset
    if not 0 <= value <= max_value:
        return None
    steps.append(dataclasses.replace(slipped, written=value))
    for step in trace.steps[index + 1 :]:
        result = apply_op(step.op, value, step.rhs)
        if not 0 <= result <= max_value:
            return None
        steps.append(Step(value, step.op, step.rhs, result))
        value = result
    return tuple(steps)


def with_slip(
    trace: Trace,
    rng: np.random.Generator | int,
    cfg: TraceConfig = IN_DISTRIBUTION,
    index: int | None = None,
) -> Trace:
    """`trace` with one arithmetic slip at step `index` (drawn uniformly among the steps that
    admit a slip within bounds when None); the offset is uniform among the legal ones."""
    rng = _as_rng(rng)
    if trace.slip_index is not None or not all(trace.labels):
        raise ValueError("with_slip expects a correct trace (this one already has a wrong step)")
    offsets = [o for o in range(-cfg.max_slip, cfg.max_slip + 1) if o]
    options = {
        i: [o for o in offsets if _slipped_steps(trace, i, o, cfg.max_value) is not None]
        for i in range(len(trace.steps))
    }
    if index is None:
        candidates = [i for i, legal in options.items() if legal]
        if not candidates:  # unreachable within bounds: the last step can always slip by 1
            raise ValueError(f"no step of {trace.problem} admits a slip within bounds")
        index = candidates[int(rng.integers(len(candidates)))]
    elif not 0 <= index < len(trace.steps):
        raise IndexError(f"slip index {index} outside the {len(trace.steps)} steps")
    if not options[index]:
        raise ValueError(
            f"step {index} of {trace.problem} admits no slip of at most {cfg.max_slip} that "
            f"keeps every later result within [0, {cfg.max_value}]"
        )
    offset = options[index][int(rng.integers(len(options[index])))]
    steps = _slipped_steps(trace, index, offset, cfg.max_value)
    return Trace(trace.problem, steps, slip_index=index)
