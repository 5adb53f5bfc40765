"""Synthetic PRM data (spec §5): seeded arithmetic problems, clean solutions and slips, labels.

Training set: clean solutions plus naturally erroneous ones (one arithmetic slip, later steps
consistent with it), `slip_fraction` of them slipped. Held-out sets (tier-1 perturbations,
ProcessBench-style F1, attacks, RL prompts) are drawn from other seeded streams and exclude every
training problem. Labels are `steps.true_labels` (one per "\\n\\n" chunk, the answer included).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from projects.prm_biasbench import perturbations
from projects.prm_biasbench.prm_models import LABEL_WORDS
from projects.prm_biasbench.steps import true_labels
from shared import rng
from shared.data.arithmetic_trace_text import render_prm, render_question, vocabulary
from shared.data.arithmetic_traces import Problem, TraceConfig, sample_trace, with_slip
from shared.data.word_tokenizer import WordTokenizer


@dataclasses.dataclass(frozen=True)
class Example:
    problem: Problem
    question: str  # render_question(problem)
    solution: str  # PRM format (render_prm), possibly perturbed
    labels: tuple[int, ...]  # true label of every chunk (steps.true_labels)


def example(problem: Problem, solution: str) -> Example:
    labels = tuple(true_labels(problem, solution))
    return Example(problem, render_question(problem), solution, labels)


def words(cfg: TraceConfig) -> list[str]:
    """The decoder PRM's and the policy's vocabulary: trace words, the words perturbations
    write, and the decoder's label words."""
    return list(dict.fromkeys([*vocabulary(cfg), *perturbations.WORDS, *LABEL_WORDS]))


def word_tokenizer(cfg: TraceConfig) -> WordTokenizer:
    return WordTokenizer(words(cfg))


def draw_problems(
    n: int, cfg: TraceConfig, seed: int, stream: str, exclude: frozenset = frozenset()
) -> list:
    """`n` distinct correct traces from stream `stream`, none of whose problems is in `exclude`."""
    gen = rng.numpy_rng(seed, stream)
    traces, seen = [], set(exclude)
    while len(traces) < n:
        t = sample_trace(gen, cfg)
        if t.problem not in seen:
            seen.add(t.problem)
            traces.append(t)
    return traces


def training_set(n: int, slip_fraction: float, cfg: TraceConfig, seed: int) -> list[Example]:
    """`n` examples: round(n * slip_fraction) slipped ones, each beside the clean solution of the
    same problem while clean ones last, then clean solutions of further problems. Pairs show
    the PRM solutions that differ only from the slip on (Reconstruction: the spec asks for
    clean plus slipped solutions, not how they are drawn; independent problems for each were
    tried first and a 2-layer PRM did not learn to spot slips within 2,000 steps)."""
    n_slip = round(n * slip_fraction)
    n_pairs = min(n_slip, n - n_slip)
    traces = draw_problems(n - n_pairs, cfg, seed, "prm_train")
    gen = rng.numpy_rng(seed, "prm_train_slips")
    out = []
    for i, t in enumerate(traces):
        if i < n_slip:
            out.append(example(t.problem, render_prm(with_slip(t, gen, cfg))))
        if i < n_pairs or i >= n_slip:
            out.append(example(t.problem, render_prm(t)))
    order = rng.numpy_rng(seed, "prm_train_order").permutation(n)
    return [out[i] for i in order]


def held_out(n: int, cfg: TraceConfig, seed: int, stream: str, train: list[Example]) -> list:
    """`n` correct traces for evaluation, disjoint from the training problems."""
    return draw_problems(n, cfg, seed, stream, frozenset(e.problem for e in train))


def slipped(traces: list, cfg: TraceConfig, seed: int, stream: str) -> list[Example]:
    """One slip in each trace (held-out erroneous solutions)."""
    gen = rng.numpy_rng(seed, stream)
    return [example(t.problem, render_prm(with_slip(t, gen, cfg))) for t in traces]


def clean(traces: list) -> list[Example]:
    return [example(t.problem, render_prm(t)) for t in traces]


def perturbable(
    n: int, cfg: TraceConfig, seed: int, stream: str, train: list[Example]
) -> tuple[list, dict[str, list[Example]], int]:
    """`n` held-out correct traces (disjoint from the training problems) that admit every
    perturbation type, each perturbed by every type (candidate i with numpy_rng(seed,
    "perturb/<type>", i)) -> (traces, {type: examples}, rejected). A candidate with a type that
    has no option within the number bounds (`perturbations.NotApplicable`, e.g. no contradiction
    keeps 0..10) is rejected and counted, so every type sees the same solutions."""
    gen = rng.numpy_rng(seed, stream)
    seen = {e.problem for e in train}
    traces, sets, candidate = [], {k: [] for k in perturbations.TYPES}, 0
    while len(traces) < n:
        t = sample_trace(gen, cfg)
        if t.problem in seen:
            continue
        seen.add(t.problem)
        text, i = render_prm(t), candidate
        candidate += 1
        try:
            out = {
                k: perturbations.perturb(
                    k, t.problem, text, rng.numpy_rng(seed, f"perturb/{k}", i), cfg
                )
                for k in perturbations.TYPES
            }
        except perturbations.NotApplicable:
            continue
        traces.append(t)
        for k, perturbed_text in out.items():
            sets[k].append(example(t.problem, perturbed_text))
    return traces, sets, candidate - n


def label_counts(examples: list[Example]) -> dict[str, float]:
    """Share of solutions with at least one wrong step (a check of what a set contains)."""
    return {"share_with_error": float(np.mean([0 in e.labels for e in examples]))}
