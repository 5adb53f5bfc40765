"""The synthetic task: traces are right by construction, check lines never change an answer,
and the shared check budget makes the per-question checks fall like 1/N."""

import numpy as np
import pytest

from projects.conpress import synthetic
from projects.conpress.parsing import parse_output
from projects.conpress.prompts import build_prompt
from shared.data.arithmetic_trace_text import parse_conpress, render_question
from shared.data.arithmetic_traces import evaluate


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_targets_answer_every_question_and_checks_restate_earlier_steps(n):
    rng = np.random.default_rng(n)
    tok = synthetic.tokenizer()
    for hard in (False, True):
        cfg = synthetic.split_config(hard)
        for _ in range(20):
            problems = synthetic.draw_problems(rng, n, cfg)
            text = synthetic.target_text(problems, 6, rng)
            prompt = synthetic.prompt_text(problems)
            for t in (text, prompt):  # canonical word text: exact round trip, no unknown word
                assert tok.unknown_words(t) == [] and tok.decode(tok.encode(t)) == t
            parsed = parse_output(text, n)
            assert parsed.ok
            for p, seg in zip(problems, parsed.segments):
                sol = parse_conpress(seg.text)
                # The final answer is the evaluation of the listed steps, and the problem's.
                value = p.start
                for step in sol.steps:
                    assert step.lhs == value and step.holds
                    value = step.written
                assert sol.answer == value == evaluate(p) == int(synthetic.gold(p))
                assert seg.answer == synthetic.gold(p)
                # Check lines restate an equation written above them: dropping them changes
                # neither the steps nor the answer.
                earlier = set(sol.steps)
                assert all(c in earlier for c in sol.checks)
                no_checks = "\n".join(x for x in seg.text.split("\n") if not x.startswith("check"))
                assert parse_conpress(no_checks).answer == sol.answer
            assert prompt == build_prompt([render_question(p) for p in problems])


def test_check_budget_is_shared_across_the_questions_of_a_prompt():
    rng = np.random.default_rng(0)
    draws = 4000
    for n in (1, 2, 4, 8):
        counts = np.array([synthetic.check_counts(rng, n, 6) for _ in range(draws)])
        assert counts.shape == (draws, n) and counts.min() >= 0
        assert counts.sum(1).max() <= 6  # one budget for the whole output
        # E[checks per question] = 3 / n; the total is uniform on 0..6 (variance 4).
        per_question = counts.mean()
        assert abs(per_question - 3 / n) < 4 * np.sqrt(4 / draws) / n
    assert synthetic.check_counts(rng, 3, 0) == [0, 0, 0]


def test_held_out_problems_avoid_the_excluded_ones():
    rng = np.random.default_rng(0)
    cfg = synthetic.split_config(False, max_value=9)  # a small space, so collisions happen
    train = synthetic.draw_problems(rng, 200, cfg)
    held = synthetic.draw_problems(rng, 200, cfg, exclude=set(train))
    assert len(set(train)) == 200 and len(set(held)) == 200 and not set(train) & set(held)


def test_training_examples_split_questions_equally_among_prompt_sizes():
    rng = np.random.default_rng(0)
    ex = synthetic.training_examples(rng, 64, (1, 2, 4, 8), 6, 99)
    sizes = [max(1, e.prompt.count("\nQ")) for e in ex]
    assert sorted(sizes) == sorted([1] * 16 + [2] * 8 + [4] * 4 + [8] * 2)
    assert all(parse_output(e.response, k).ok for e, k in zip(ex, sizes))


def test_a_right_answer_can_end_a_wrong_trace():
    q = "Start with 2. Add 3. Subtract 1."
    right = "step: 2 + 3 = 5\ncheck: 2 + 3 = 5\nstep: 5 - 1 = 4\n\\boxed{4}"
    lucky = "step: 2 + 3 = 6\nstep: 6 - 2 = 4\n\\boxed{4}"  # a slip, then a wrong operand
    assert synthetic.trace_is_right(q, right)
    assert not synthetic.trace_is_right(q, lucky)
    assert parse_output(lucky, 1).segments[0].answer == "4"  # passes the correctness filter
    assert not synthetic.trace_is_right(q, "step: 2 + 3 = 5\n\\boxed{5}")  # a step missing
    assert not synthetic.trace_is_right(q, "not a trace")
