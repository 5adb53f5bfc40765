"""Step splitting, true labels and the 8 perturbation types (spec §6, first two items)."""

import numpy as np
import pytest

from projects.prm_biasbench import data, perturbations, steps
from shared.data.arithmetic_trace_text import (
    label_steps,
    parse_equations,
    render_prm,
    render_question,
    split_prm,
)
from shared.data.arithmetic_traces import (
    IN_DISTRIBUTION,
    Problem,
    Step,
    Trace,
    TraceConfig,
    sample_trace,
    with_slip,
)

PROBLEM = Problem(17, (("+", 25), ("-", 8), ("*", 2)))
CLEAN = "Step 1: 17 + 25 = 42\n\nStep 2: 42 - 8 = 34\n\nStep 3: 34 * 2 = 68\n\nAnswer: 68"
TRACES = [sample_trace(np.random.default_rng(i)) for i in range(40)]


def test_split_on_blank_lines_keeps_the_answer_chunk_and_empty_chunks():
    assert steps.split_steps(CLEAN) == [
        "Step 1: 17 + 25 = 42", "Step 2: 42 - 8 = 34", "Step 3: 34 * 2 = 68", "Answer: 68",
    ]  # fmt: skip
    assert steps.split_steps("a\n\n\n\nb") == ["a", "", "b"]  # an extra blank line: a step
    assert steps.split_steps("a\nb") == ["a\nb"]  # one newline does not split
    with pytest.raises(steps.MalformedTraceError, match="empty"):
        steps.split_steps("  ")


def test_label_rule_on_hand_made_traces():
    assert steps.true_labels(PROBLEM, CLEAN) == [1, 1, 1, 1]
    # error at step 2 -> [1, 0, 0, ...]: later steps follow the wrong value and are still 0
    slip = "Step 1: 17 + 25 = 42\n\nStep 2: 42 - 8 = 35\n\nStep 3: 35 * 2 = 70\n\nAnswer: 70"
    assert steps.true_labels(PROBLEM, slip) == [1, 0, 0, 0]
    assert steps.first_error([1, 0, 0, 0]) == 1 and steps.first_error([1, 1]) == -1
    # a true equation that is not the question's operation, or does not continue the chain
    wrong_op = "Step 1: 17 + 26 = 43\n\nStep 2: 43 - 8 = 35\n\nStep 3: 35 * 2 = 70\n\nAnswer: 70"
    assert steps.true_labels(PROBLEM, wrong_op) == [0, 0, 0, 0]
    skip = "Step 1: 17 + 25 = 42\n\nStep 2: 34 * 2 = 68\n\nAnswer: 68"
    assert steps.true_labels(PROBLEM, skip) == [1, 0, 0]
    # filler chunks assert nothing; a right answer after right steps is right
    filler = "Step 1: 17 + 25 = 42\n\nWe go on.\n\nStep 2: 42 - 8 = 34\n\nStep 3: 34 * 2 = 68\n\nAnswer: 68"  # noqa: E501
    assert steps.true_labels(PROBLEM, filler) == [1, 1, 1, 1, 1]
    assert steps.true_labels(PROBLEM, CLEAN.replace("Answer: 68", "Answer: 69")) == [1, 1, 1, 0]
    truncated = "Step 1: 17 + 25 = 42\n\nAnswer: 68"  # stops before the last operations
    assert steps.true_labels(PROBLEM, truncated) == [1, 0]


def test_labels_agree_with_the_generator_and_the_text_labeller():
    for i, t in enumerate(TRACES):
        s = with_slip(t, i)
        for trace in (t, s):
            text = render_prm(trace)
            labels = steps.true_labels(trace.problem, text)
            assert labels[:-1] == trace.labels == label_steps(text, chained=True)
            assert labels[-1] == int(all(trace.labels))


def test_canonical_parser_round_trips_and_names_the_bad_block():
    for t in TRACES[:10]:
        parsed = steps.parse_canonical(render_prm(t))
        assert parsed.steps == t.steps and parsed.answer == t.answer
        assert steps.render_canonical(parsed.steps, parsed.answer) == render_prm(t)
    with pytest.raises(steps.MalformedTraceError, match="Answer: N"):
        steps.parse_canonical("Step 1: 1 + 1 = 2")
    with pytest.raises(steps.MalformedTraceError, match="block 2"):
        steps.parse_canonical("Step 1: 1 + 1 = 2\n\nStep 3: 2 + 1 = 3\n\nAnswer: 3")
    with pytest.raises(steps.MalformedTraceError, match="beyond its equation"):
        steps.parse_canonical("Step 1: 1 + 1 = 2 ok\n\nAnswer: 2")
    with pytest.raises(steps.MalformedTraceError, match="no step"):
        steps.parse_canonical("Answer: 2")


def _perturbed(kind, trace, seed=0):
    gen = np.random.default_rng(seed)
    return perturbations.perturb(kind, trace.problem, render_prm(trace), gen, IN_DISTRIBUTION)


@pytest.mark.parametrize("kind", perturbations.STYLE)
def test_style_types_keep_the_answer_and_every_equation(kind):
    for t in TRACES:
        text = _perturbed(kind, t)
        assert text != render_prm(t)
        assert split_prm(text)[1] == t.answer
        assert parse_equations(text) == list(t.steps)
        assert steps.true_labels(t.problem, text) == [1] * len(steps.split_steps(text))


def test_style_types_change_the_step_count_only_where_intended():
    t = TRACES[0]
    k = len(t.steps) + 1
    counts = {kind: len(steps.split_steps(_perturbed(kind, t))) for kind in perturbations.STYLE}
    assert counts == {"synonym": k, "filler": k, "reformat": 2 * k - 1, "restate": k + 1}
    assert _perturbed("restate", t).startswith(render_question(t.problem) + "\n\n")
    assert "Step" not in _perturbed("synonym", t).split("\n\nAnswer")[0]


@pytest.mark.parametrize("kind", perturbations.LOGIC)
def test_logic_types_make_a_step_wrong(kind):
    for t in TRACES:
        text = _perturbed(kind, t)
        assert 0 in steps.true_labels(t.problem, text)
        assert 0 in label_steps(text, chained=True) or kind == "swapped_operand"


def test_logic_types_keep_or_change_the_answer_as_documented():
    for t in TRACES:
        right = t.answer
        assert split_prm(_perturbed("wrong_result", t))[1] == right
        assert split_prm(_perturbed("skipped_step", t))[1] == right
        assert split_prm(_perturbed("swapped_operand", t))[1] != right  # (an injective chain)
        eqs = parse_equations(_perturbed("swapped_operand", t))
        assert all(e.holds for e in eqs)  # arithmetic holds; the operand is not the question's
        assert len(parse_equations(_perturbed("skipped_step", t))) == len(t.steps) - 1


@pytest.mark.parametrize("kind", perturbations.TYPES)
def test_perturbations_are_deterministic_under_a_seed(kind):
    outs = {_perturbed(kind, t, seed=3) for t in TRACES[:1] for _ in range(3)}
    assert len(outs) == 1
    if kind not in ("reformat", "restate"):  # the two deterministic types
        assert len({_perturbed(kind, TRACES[1], seed=s) for s in range(20)}) > 1


def test_every_perturbed_word_is_in_the_vocabulary():
    tok = data.word_tokenizer(IN_DISTRIBUTION)
    for kind in perturbations.TYPES:
        for t in TRACES[:10]:
            text = _perturbed(kind, t)
            assert tok.unknown_words(text) == [] and tok.decode(tok.encode(text)) == text


def test_bad_input_is_refused_clearly():
    t = TRACES[0]
    with pytest.raises(ValueError, match="unknown perturbation type 'typo'.*synonym"):
        _perturbed("typo", t)
    with pytest.raises(steps.MalformedTraceError):
        perturbations.perturb(
            "synonym", t.problem, "Step 1: nonsense", np.random.default_rng(0), IN_DISTRIBUTION
        )
    short = Trace(Problem(3, (("+", 1),)), (Step(3, "+", 1, 4),))
    with pytest.raises(perturbations.NotApplicable, match="at least 2 steps"):
        _perturbed("skipped_step", short)


def test_small_bounds_reject_solutions_without_a_contradiction_and_count_them():
    """Up to 10, 1 * 10 = 10, 10 - 10 = 0, 0 + 1 = 1, 1 * 6 = 6 admits no contradiction (every
    other start of a step leaves 0..10 or makes an operation illegal)."""
    small = TraceConfig(max_operand=10, max_value=10)
    t = Trace(
        Problem(1, (("*", 10), ("-", 10), ("+", 1), ("*", 6))),
        (Step(1, "*", 10, 10), Step(10, "-", 10, 0), Step(0, "+", 1, 1), Step(1, "*", 6, 6)),
    )
    gen = np.random.default_rng(0)
    with pytest.raises(perturbations.NotApplicable, match="contradiction"):
        perturbations.perturb("contradiction", t.problem, render_prm(t), gen, small)
    train = data.training_set(20, 0.5, small, 0)
    traces, sets, rejected = data.perturbable(300, small, 0, "tier1", train)
    assert len(traces) == 300 and rejected > 0  # about 1 in 75 at this bound
    for kind, examples in sets.items():
        assert [e.problem for e in examples] == [t.problem for t in traces]
        assert all(e.labels[-1] == (kind in perturbations.STYLE) for e in examples)
    assert data.perturbable(300, small, 0, "tier1", train)[1] == sets  # seeded


def test_training_pairs_and_held_out_sets_are_disjoint():
    train = data.training_set(40, 0.5, IN_DISTRIBUTION, 0)
    slipped = [e for e in train if 0 in e.labels]
    assert len(train) == 40 and len(slipped) == 20
    clean_problems = {e.problem for e in train if 0 not in e.labels}
    assert {e.problem for e in slipped} <= clean_problems  # each slip beside its clean twin
    held = data.held_out(30, IN_DISTRIBUTION, 0, "tier1", train)
    assert not {t.problem for t in held} & {e.problem for e in train}
    assert data.training_set(40, 0.5, IN_DISTRIBUTION, 0) == train  # seeded
    # more slips than clean solutions: every clean one is a twin, the rest unpaired
    skewed = data.training_set(10, 0.7, IN_DISTRIBUTION, 0)
    assert sum(0 in e.labels for e in skewed) == 7 and len({e.problem for e in skewed}) == 7
