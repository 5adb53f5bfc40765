"""The 8 perturbation types of tier 1 (../../shared/papers/prm_biasbench.md §5): 4 style, 4 logic.

Each takes a problem and its canonical PRM-format solution (`steps.parse_canonical`) and returns
perturbed text; randomness comes only from the numpy Generator passed in.
Style types keep the final answer and every equation; logic types make at least one step's true
label (`steps.true_labels`) 0. Reconstruction: the paper lists its 8 types on ProcessBench text;
the spec names these 8 for the synthetic traces, and the details below (phrases, which step,
offsets) are ours.

style
- synonym: every header "Step k:" becomes "Next," / "Then," / "Now," (drawn per step).
- filler: a filler sentence after the header of each step with probability 1/2 (at least one).
- reformat: every header on its own chunk ("Step 1:\\n\\n17 + 25 = 42"): the PRM scores twice as
  many steps before the answer; blank lines shift r_last mechanically (spec §3).
- restate: a first chunk restating the question verbatim.
logic
- wrong_result: one step's result off by 1..max_slip; later steps unchanged (they continue from the
  right value), so the final answer stays right. Training slips propagate; this one does not.
- swapped_operand: one step uses another operand than the question's (the arithmetic holds);
  later steps and the answer follow it.
- skipped_step: one step (not the last) removed and the rest renumbered; the chain breaks, the
  answer stays right.
- contradiction: one step (not the first) starts from a value 1..max_slip away from the result
  written just before it (the arithmetic holds); later steps and the answer follow it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from projects.prm_biasbench.steps import SEPARATOR, parse_canonical, render_canonical
from shared.data.arithmetic_trace_text import render_question
from shared.data.arithmetic_traces import Problem, Step, TraceConfig, apply_op, operand_range

STYLE = ("synonym", "filler", "reformat", "restate")
LOGIC = ("wrong_result", "swapped_operand", "skipped_step", "contradiction")
TYPES = STYLE + LOGIC
SYNONYMS = ("Next,", "Then,", "Now,")
FILLERS = (
    "Let us compute this carefully.",
    "This is easy to check.",
    "We go on step by step.",
)
# Every word a perturbation can write beyond the trace vocabulary (for the word tokenizer).
WORDS = ("Next", "Then", "Now", ",", "Let", "us", "compute", "this", "carefully", "This", "is",
         "easy", "to", "We", "go", "on", "step")  # fmt: skip


class NotApplicable(ValueError):
    """This solution admits no perturbation of this type within the number bounds."""


def _offsets(max_slip: int) -> list[int]:
    return [o for o in range(-max_slip, max_slip + 1) if o]


def _body(steps: list[Step], answer: int, headers: list[str]) -> str:
    blocks = [f"{h} {s.lhs} {s.op} {s.rhs} = {s.written}" for h, s in zip(headers, steps)]
    return SEPARATOR.join([*blocks, f"Answer: {answer}"])


def _headers(n: int) -> list[str]:
    return [f"Step {k}:" for k in range(1, n + 1)]


def _follow(steps: list[Step], j: int, new: Step, max_value: int) -> list[Step] | None:
    """Steps with step j replaced by `new` and every later step recomputed from it; None when a
    result leaves [0, max_value] or an operation becomes illegal (negative or *0 chains)."""
    out, value = [*steps[:j], new], new.written
    for s in steps[j + 1 :]:
        result = apply_op(s.op, value, s.rhs)
        if not 0 <= result <= max_value or (s.op == "*" and value == 0):
            return None
        out.append(Step(value, s.op, s.rhs, result))
        value = result
    return out


def synonym(problem, steps, answer, rng, cfg) -> str:
    return _body(steps, answer, [SYNONYMS[int(rng.integers(len(SYNONYMS)))] for _ in steps])


def filler(problem, steps, answer, rng, cfg) -> str:
    chosen = rng.random(len(steps)) < 0.5
    chosen[int(rng.integers(len(steps)))] = True
    headers = _headers(len(steps))
    for k in np.flatnonzero(chosen):
        headers[k] += " " + FILLERS[int(rng.integers(len(FILLERS)))]
    return _body(steps, answer, headers)


def reformat(problem, steps, answer, rng, cfg) -> str:
    blocks = []
    for header, s in zip(_headers(len(steps)), steps):
        blocks += [header, f"{s.lhs} {s.op} {s.rhs} = {s.written}"]
    return SEPARATOR.join([*blocks, f"Answer: {answer}"])


def restate(problem, steps, answer, rng, cfg) -> str:
    return render_question(problem) + SEPARATOR + render_canonical(steps, answer)


def wrong_result(problem, steps, answer, rng, cfg) -> str:
    options = [
        (j, o)
        for j, s in enumerate(steps)
        for o in _offsets(cfg.max_slip)
        if 0 <= s.written + o <= cfg.max_value
    ]
    j, o = options[int(rng.integers(len(options)))]
    steps = [*steps]
    steps[j] = dataclasses.replace(steps[j], written=steps[j].written + o)
    return render_canonical(steps, answer)


def swapped_operand(problem, steps, answer, rng, cfg) -> str:
    options = []
    for j, s in enumerate(steps):
        for b in operand_range(s.lhs, s.op, cfg):
            new = Step(s.lhs, s.op, b, apply_op(s.op, s.lhs, b))
            if b != s.rhs and (chain := _follow(steps, j, new, cfg.max_value)) is not None:
                options.append(chain)
    if not options:
        raise NotApplicable(f"no step of {problem} admits another operand within bounds")
    chain = options[int(rng.integers(len(options)))]
    return render_canonical(chain, chain[-1].written)


def skipped_step(problem, steps, answer, rng, cfg) -> str:
    if len(steps) < 2:
        raise NotApplicable("skipped_step needs at least 2 steps (the last one is kept)")
    j = int(rng.integers(len(steps) - 1))
    return render_canonical([*steps[:j], *steps[j + 1 :]], answer)


def contradiction(problem, steps, answer, rng, cfg) -> str:
    options = []
    for j, s in enumerate(steps[1:], 1):
        for o in _offsets(cfg.max_slip):
            lhs = s.lhs + o
            if lhs < 0 or s.rhs not in operand_range(lhs, s.op, cfg):
                continue
            new = Step(lhs, s.op, s.rhs, apply_op(s.op, lhs, s.rhs))
            if (chain := _follow(steps, j, new, cfg.max_value)) is not None:
                options.append(chain)
    if not options:
        raise NotApplicable(f"no step of {problem} admits a contradiction within bounds")
    chain = options[int(rng.integers(len(options)))]
    return render_canonical(chain, chain[-1].written)


_FUNCTIONS: dict[str, Callable] = {
    "synonym": synonym,
    "filler": filler,
    "reformat": reformat,
    "restate": restate,
    "wrong_result": wrong_result,
    "swapped_operand": swapped_operand,
    "skipped_step": skipped_step,
    "contradiction": contradiction,
}


def check_type(kind: str) -> str:
    if kind not in _FUNCTIONS:
        raise ValueError(f"unknown perturbation type {kind!r}; choose one of {TYPES}")
    return kind


def perturb(
    kind: str, problem: Problem, text: str, rng: np.random.Generator, cfg: TraceConfig
) -> str:
    """`text` (a canonical solution of `problem`) perturbed by `kind`; MalformedTraceError for
    a text that is not canonical, ValueError for an unknown type, NotApplicable when no
    perturbation of this type keeps every number within [0, cfg.max_value] (small bounds)."""
    parsed = parse_canonical(text)
    return _FUNCTIONS[check_type(kind)](problem, list(parsed.steps), parsed.answer, rng, cfg)
