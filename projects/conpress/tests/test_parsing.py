"""The parser and the answer normalizer: every case of the spec's section 6, and the malformed
outputs a sampled model writes (reported and dropped, never raised)."""

import pytest

from projects.conpress.normalize import answers_match, normalize_answer
from projects.conpress.parsing import boxed_contents, last_boxed, parse_output

WELL_FORMED = (
    "### Q1\nstep: 1 + 2 = 3\n\\boxed{3}\n"
    "### Q2\nfirst \\boxed{7} then \\boxed{8}\n"
    "### Q3\n\\boxed{\\frac{1}{2}}"
)


def test_well_formed_three_questions_give_three_segments():
    p = parse_output(WELL_FORMED, 3)
    assert p.ok and len(p.segments) == 3
    assert [s.answer for s in p.segments] == ["3", "8", "\\frac{1}{2}"]
    assert p.segments[0].text == "step: 1 + 2 = 3\n\\boxed{3}"
    # Segments and markers tile the output: nothing is lost between them.
    pieces = sorted([*p.markers, *((s.start, s.end) for s in p.segments)])
    assert pieces[0][0] == 0 and pieces[-1][1] == len(WELL_FORMED)
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))


@pytest.mark.parametrize(
    "text, error",
    [
        (WELL_FORMED.replace("### Q2\n", ""), "missing marker(s) Q2"),
        (WELL_FORMED.replace("### Q3", "### Q2"), "duplicated marker(s) Q2"),
        (WELL_FORMED + "\n### Q1\n\\boxed{3}", "duplicated marker(s) Q1"),
        ("### Q2\n\\boxed{1}\n### Q1\n\\boxed{2}\n### Q3\n\\boxed{3}", "markers out of order"),
        (WELL_FORMED + "\n### Q4\n\\boxed{4}", "unexpected marker(s) Q4"),
        ("no markers at all \\boxed{3}", "missing marker(s) Q1, Q2, Q3"),
        ("", "missing marker(s) Q1, Q2, Q3"),
    ],
)
def test_malformed_markers_drop_the_output_with_a_reason(text, error):
    p = parse_output(text, 3)
    assert not p.ok and p.segments == ()
    assert p.error.startswith(error)


def test_marker_variants_and_preamble():
    text = "Sure!\n## Q1:\n\\boxed{1}\n### Question 2.\n\\boxed{2}"
    p = parse_output(text, 2)
    assert p.ok and [s.answer for s in p.segments] == ["1", "2"]
    assert p.preamble == "Sure!"
    # A marker's line may go on with the answer; that text belongs to the segment.
    p = parse_output("### Q1: so \\boxed{5}\n### Q2 \\boxed{6}", 2)
    assert [s.text for s in p.segments] == ["so \\boxed{5}", "\\boxed{6}"]
    # "Q1" inside a line, or a word starting with Q, is not a marker.
    assert not parse_output("see Q1 and Q2", 2).ok
    assert not parse_output("### Quick 1\n### Q2", 2).ok


def test_single_question_output_is_one_segment():
    p = parse_output("step: 1 + 2 = 3\n\\boxed{3}", 1)
    assert p.ok and p.markers == () and p.segments[0].answer == "3"
    assert parse_output("no box", 1).segments[0].answer is None
    with pytest.raises(ValueError, match="n must be >= 1"):
        parse_output("x", 0)


def test_a_segment_without_a_box_is_parsed_with_no_answer():
    p = parse_output("### Q1\n\\boxed{1}\n### Q2\nno answer\n", 2)
    assert p.ok and [s.answer for s in p.segments] == ["1", None]


def test_boxed_nested_last_wins_and_unbalanced():
    assert last_boxed("\\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert last_boxed("\\boxed{1} and \\boxed{2}") == "2"
    assert last_boxed("\\boxed{\\{1, 2\\}}") == "\\{1, 2\\}"  # escaped braces are text
    assert last_boxed("\\boxed {4}") == "4"
    # An unclosed last box does not count: the earlier complete one wins.
    assert last_boxed("\\boxed{1} then \\boxed{2") == "1"
    assert boxed_contents("\\boxed{") == [] and last_boxed("42") is None


def test_non_text_output_is_reported():
    p = parse_output(None, 2)
    assert not p.ok and "not text" in p.error


@pytest.mark.parametrize("variant", ["42", " 42 ", "\\boxed{42}", "42.0", "$42$", "42.", "{42}"])
def test_normalizer_integers(variant):
    assert normalize_answer(variant) == "42"
    assert answers_match(variant, "42")


@pytest.mark.parametrize(
    "variant", ["1/2", "\\frac{1}{2}", "\\dfrac{1}{2}", "\\frac12", "0.5", "\\boxed{\\frac{2}{4}}"]
)
def test_normalizer_fractions(variant):
    assert normalize_answer(variant) == "1/2"
    assert answers_match(variant, "\\frac{1}{2}")


def test_normalizer_other_cases():
    assert normalize_answer("-\\frac{1}{2}") == normalize_answer("\\frac{-1}{2}") == "-1/2"
    assert normalize_answer("1,000") == "1000"
    assert normalize_answer("8 apples") == normalize_answer("8 \\text{ apples}") == "8"
    assert normalize_answer("\\left( 3 \\right)") == "(3)"
    assert normalize_answer("x^2 + 1") == "x^2+1"
    assert normalize_answer("1/0") == "1/0"  # not a number: kept as text, never equal to 0
    assert not answers_match("41", "42") and not answers_match("0.51", "1/2")
    # Empty answers match nothing, not even each other.
    assert normalize_answer("") is None and normalize_answer(None) is None
    assert not answers_match("", "") and not answers_match(None, "42")
