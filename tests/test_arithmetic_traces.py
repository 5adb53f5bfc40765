import dataclasses

import numpy as np
import pytest

from shared.data.arithmetic_trace_text import (
    label_steps,
    parse_conpress,
    parse_equations,
    parse_question,
    render_conpress,
    render_prm,
    render_question,
    split_prm,
    vocabulary,
)
from shared.data.arithmetic_traces import (
    HARD,
    IN_DISTRIBUTION,
    OPS,
    Problem,
    Step,
    Trace,
    TraceConfig,
    apply_op,
    evaluate,
    operand_range,
    sample_problem,
    sample_trace,
    solve,
    with_slip,
)

SMALL = TraceConfig(min_ops=1, max_ops=2, max_operand=10, max_value=10, max_slip=2)
# Subtraction to 0, then the only legal move from 0 (an addition), then a multiplication.
EDGE = Problem(5, (("-", 5), ("+", 3), ("*", 2)))


def sampled(cfg: TraceConfig, n: int, seed: int = 0) -> list[Trace]:
    rng = np.random.default_rng(seed)
    return [sample_trace(rng, cfg) for _ in range(n)]


def test_the_edge_problem_renders_in_every_format():
    trace = solve(EDGE)
    assert render_question(EDGE) == "Start with 5. Subtract 5. Add 3. Multiply by 2."
    assert render_prm(trace) == (
        "Step 1: 5 - 5 = 0\n\nStep 2: 0 + 3 = 3\n\nStep 3: 3 * 2 = 6\n\nAnswer: 6"
    )
    assert render_conpress(trace) == "step: 5 - 5 = 0\nstep: 0 + 3 = 3\nstep: 3 * 2 = 6\n\\boxed{6}"
    assert trace.answer == evaluate(EDGE) == 6 and trace.labels == [1, 1, 1]


def test_same_seed_same_problems_and_an_int_seed_equals_its_generator():
    assert sampled(IN_DISTRIBUTION, 50, seed=3) == sampled(IN_DISTRIBUTION, 50, seed=3)
    assert sampled(IN_DISTRIBUTION, 50, seed=3) != sampled(IN_DISTRIBUTION, 50, seed=4)
    assert sample_problem(7) == sample_problem(np.random.default_rng(7))
    trace = solve(EDGE)
    assert with_slip(trace, 5) == with_slip(trace, np.random.default_rng(5))
    texts = [render_conpress(trace, 4, np.random.default_rng(1)) for _ in range(2)]
    assert texts[0] == texts[1]


@pytest.mark.parametrize(
    "cfg, counts",
    [
        (IN_DISTRIBUTION, {3, 4, 5, 6}),
        (HARD, {7, 8}),
        (TraceConfig(min_ops=1, max_ops=1), {1}),
        (TraceConfig(min_ops=12, max_ops=12), {12}),
    ],
)
def test_operation_counts_cover_exactly_the_configured_range(cfg, counts):
    assert {len(t.steps) for t in sampled(cfg, 200)} == counts


@pytest.mark.parametrize("cfg", [IN_DISTRIBUTION, SMALL, TraceConfig(max_operand=50, max_value=9)])
def test_operand_range_is_exactly_the_bounded_non_trivial_operands(cfg):
    """Enumerates every value and operand: the range holds the operands that keep the result in
    [0, max_value], minus +0, -0, *0, *1 and 0*b; from every value + or - is legal."""
    for value in range(cfg.max_value + 1):
        for op in OPS:
            trivial = {"+": {0}, "-": {0}, "*": {0, 1}}[op]
            if op == "*" and value == 0:
                trivial = set(range(cfg.max_operand + 1))
            expected = [
                b
                for b in range(cfg.max_operand + 1)
                if b not in trivial and 0 <= apply_op(op, value, b) <= cfg.max_value
            ]
            assert list(operand_range(value, op, cfg)) == expected, (value, op)
        assert operand_range(value, "+", cfg) or operand_range(value, "-", cfg)
        if value <= cfg.max_operand:  # subtraction down to 0 is reachable
            assert value == 0 or value in operand_range(value, "-", cfg)


@pytest.mark.parametrize("cfg", [IN_DISTRIBUTION, HARD, SMALL])
def test_sampled_values_stay_within_bounds(cfg):
    traces = sampled(cfg, 300)
    for trace in traces:
        assert 0 <= trace.problem.start <= min(cfg.max_operand, cfg.max_value)
        for step in trace.steps:
            assert 0 <= step.rhs <= cfg.max_operand and 0 <= step.written <= cfg.max_value
            assert (step.op, step.rhs) not in {("+", 0), ("-", 0), ("*", 0), ("*", 1)}
    ops = {s.op for t in traces for s in t.steps}
    results = {s.written for t in traces for s in t.steps}
    assert ops == set(OPS) and 0 in results  # every operation occurs; so do zeros


def test_the_answer_is_the_evaluation_of_the_listed_steps():
    for cfg in (IN_DISTRIBUTION, HARD):
        for trace in sampled(cfg, 100):
            solution = parse_conpress(render_conpress(trace))
            steps, answer = split_prm(render_prm(trace))
            listed = [parse_equations(block)[0] for block in steps]
            for parsed in (list(solution.steps), listed):
                assert all(s.holds for s in parsed)
                chain = [trace.problem.start] + [s.written for s in parsed[:-1]]
                assert [s.lhs for s in parsed] == chain
                assert [(s.op, s.rhs) for s in parsed] == list(trace.problem.operations)
                assert parsed[-1].written == evaluate(trace.problem)
            assert solution.answer == answer == evaluate(trace.problem) == trace.answer


def test_check_lines_restate_earlier_equations_and_never_change_the_answer():
    rng = np.random.default_rng(0)
    for trace in sampled(IN_DISTRIBUTION, 50) + [with_slip(t, rng) for t in sampled(HARD, 20)]:
        plain = render_conpress(trace)
        for n_checks in range(7):
            text = render_conpress(trace, n_checks, rng)
            solution = parse_conpress(text)
            assert solution.steps == trace.steps and len(solution.checks) == n_checks
            assert solution.answer == trace.answer
            lines = text.split("\n")
            assert "\n".join(x for x in lines if not x.startswith("check:")) == plain
            for i, line in enumerate(lines):
                if line.startswith("check:"):  # the same equation was written above it
                    assert "step:" + line[len("check:") :] in lines[:i]


def test_render_conpress_needs_an_rng_for_checks():
    with pytest.raises(ValueError, match="needs an rng"):
        render_conpress(solve(EDGE), n_checks=1)
    with pytest.raises(ValueError, match="n_checks must be >= 0"):
        render_conpress(solve(EDGE), n_checks=-1)


def prm(*equations: str) -> str:
    """Hand-made PRM-format text: numbered steps, then the last written result as the answer."""
    blocks = [f"Step {k}: {e}" for k, e in enumerate(equations, 1)]
    return "\n\n".join([*blocks, f"Answer: {equations[-1].split()[-1]}"])


@pytest.mark.parametrize(
    "text, labels",
    [
        (prm("17 + 25 = 42", "42 - 8 = 34", "34 * 2 = 68"), [1, 1, 1]),
        (prm("17 + 25 = 42", "42 - 8 = 33", "33 * 2 = 66"), [1, 0, 0]),
        (prm("17 + 25 = 43", "43 - 8 = 35", "35 * 2 = 70"), [0, 0, 0]),
        (prm("17 + 25 = 42", "42 - 8 = 34", "34 * 2 = 67"), [1, 1, 0]),
        # a later step that is right again does not restore correctness
        (prm("17 + 25 = 42", "42 - 8 = 30", "34 * 2 = 68"), [1, 0, 0]),
        # two equations in one block: both must hold
        (prm("2 + 2 = 4 and 4 * 2 = 9", "9 + 1 = 10"), [0, 0]),
        # filler blocks assert nothing; negative numbers parse; no answer block
        ("Let me see.\n\nStep 1: 3 - 5 = -2\n\nGood.\n\nStep 2: -2 * 3 = -6", [1, 1, 1, 1]),
        ("Step 1: 3 - 5 = 2\n\nGood.", [0, 0]),
        ("Next, 2 + 2 = 4\n\nThen 4*2=8\n\nAnswer: 8", [1, 1]),  # other wording and spacing
    ],
)
def test_label_steps_on_hand_made_traces(text, labels):
    assert label_steps(text) == labels


def test_label_steps_chained_catches_arithmetic_true_contradictions():
    skipped = prm("17 + 25 = 42", "40 - 8 = 32", "32 * 2 = 64")
    assert label_steps(skipped) == [1, 1, 1]
    assert label_steps(skipped, chained=True) == [1, 0, 0]
    filler = "Step 1: 1 + 2 = 3\n\nHmm.\n\nStep 2: 3 + 4 = 7\n\nAnswer: 7"
    assert label_steps(filler, chained=True) == [1, 1, 1]


def test_split_prm_separates_the_answer_block():
    assert split_prm("Step 1: 1 + 2 = 3\n\nAnswer: 3") == (["Step 1: 1 + 2 = 3"], 3)
    assert split_prm("Step 1: 1 + 2 = 3\n\nAnswer: three") == (["Step 1: 1 + 2 = 3"], None)
    assert split_prm("Step 1: 1 + 2 = 3") == (["Step 1: 1 + 2 = 3"], None)
    assert split_prm("Step 1: 1 + 2 = 3\n\n\n\nAnswer: 3") == (["Step 1: 1 + 2 = 3", ""], 3)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_every_slip_position_of_the_edge_trace(index):
    """Step 0's true result is 0, so only positive offsets are legal there."""
    trace = solve(EDGE)
    for seed in range(20):
        slipped = with_slip(trace, seed, index=index)
        assert slipped.slip_index == index and slipped.labels == [1] * index + [0] * (3 - index)
        offset = slipped.steps[index].written - trace.steps[index].written
        assert offset in ((1, 2, 3) if index == 0 else (-3, -2, -1, 1, 2, 3))
        assert label_steps(render_prm(slipped)) == slipped.labels


def test_generated_slips_label_the_slip_and_later_steps_follow_the_wrong_value():
    rng = np.random.default_rng(0)
    positions = set()
    for cfg in (IN_DISTRIBUTION, HARD, SMALL):
        for trace in sampled(cfg, 150):
            slipped = with_slip(trace, rng, cfg)
            k = slipped.slip_index
            positions.add((len(trace.steps), k))
            assert slipped.labels.index(0) == k and sum(slipped.labels) == k
            assert [s.holds for s in slipped.steps] == [i != k for i in range(len(trace.steps))]
            assert slipped.steps[:k] == trace.steps[:k]
            assert 1 <= abs(slipped.steps[k].written - trace.steps[k].written) <= cfg.max_slip
            for before, after in zip(slipped.steps[k:], slipped.steps[k + 1 :]):
                assert after.lhs == before.written  # consistent with the slip
            assert all(0 <= s.written <= cfg.max_value for s in slipped.steps)
            assert slipped.answer != evaluate(trace.problem)
            assert label_steps(render_prm(slipped)) == slipped.labels
            assert parse_conpress(render_conpress(slipped)).labels == slipped.labels
    assert {k for n, k in positions if n == 8} == set(range(8))  # every position gets drawn


def test_a_step_without_a_legal_slip_is_never_drawn():
    # 5 * 2 = 10, 10 - 10 = 0: any slip of step 0 (7, 8, 9; 11+ is out of range) goes negative.
    trace = solve(Problem(5, (("*", 2), ("-", 10))))
    with pytest.raises(ValueError, match="step 0 .* admits no slip"):
        with_slip(trace, 0, SMALL, index=0)
    slips = {with_slip(trace, seed, SMALL).steps[1].written for seed in range(30)}
    assert slips == {1, 2}  # step 1 only, upward only (max_slip 2)


def test_with_slip_refuses_bad_input():
    trace = solve(EDGE)
    with pytest.raises(ValueError, match="expects a correct trace"):
        with_slip(with_slip(trace, 0), 1)
    with pytest.raises(IndexError, match="slip index 3 outside the 3 steps"):
        with_slip(trace, 0, index=3)


def test_trace_rejects_steps_that_do_not_follow_the_problem():
    steps = solve(EDGE).steps
    with pytest.raises(ValueError, match="do not follow"):
        Trace(EDGE, steps[:2])
    with pytest.raises(ValueError, match="do not follow"):
        Trace(EDGE, (steps[0], dataclasses.replace(steps[1], lhs=1), steps[2]))
    assert Step(3, "*", 4, 11).true_result == 12 and not Step(3, "*", 4, 11).holds


def test_question_round_trips():
    for trace in sampled(HARD, 50):
        assert parse_question(render_question(trace.problem)) == trace.problem
    with pytest.raises(ValueError, match="unreadable operations"):
        parse_question("Start with 3. Divide by 3.")
    with pytest.raises(ValueError, match="not a question"):
        parse_question("Begin with 3.")


def test_parse_conpress_rejects_unknown_lines_and_missing_boxes():
    with pytest.raises(ValueError, match="line 1 is not a step"):
        parse_conpress("step: 1 + 1 = 2\nso the answer is\n\\boxed{2}")
    with pytest.raises(ValueError, match="no \\\\boxed"):
        parse_conpress("step: 1 + 1 = 2")


def test_vocabulary_lists_every_number_once():
    words = vocabulary(HARD)
    assert len(words) == len(set(words))
    assert [w for w in words if w.isdigit()] == [str(n) for n in range(100)]
    assert vocabulary(TraceConfig(max_operand=10, max_value=300))[-1] == "300"


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"min_ops": 0}, "min_ops"),
        ({"min_ops": 5, "max_ops": 4}, "min_ops <= max_ops"),
        ({"max_value": 1}, "max_value"),
        ({"ops": ("+", "/")}, "ops must be distinct"),
        ({"ops": ("+", "*")}, "ops must contain \\+ and -"),
        ({"max_slip": 0}, "max_slip"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        TraceConfig(**kwargs)
