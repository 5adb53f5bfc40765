"""The single- and multi-question prompts of ConPress, and the output format they ask for.

From the paper (../../shared/papers/conpress.md section 2): N independent questions share one
prompt, "Answer each of the following questions. Put each answer in \\boxed{}. Q1: ... QN: ...",
and the answer to question i follows a line "### Qi". Reconstruction (the paper's exact wording
is not known): the sentence that names the markers, one question per line, and the
single-question prompt (N = 1), which has no markers: its whole response is the question's trace.
The same builder serves the synthetic model (word tokens) and SmolLM2 (inside its chat turn).
"""

from __future__ import annotations

from collections.abc import Sequence

SINGLE_HEADER = "Answer the following question. Put the answer in \\boxed{}."
MULTI_HEADER = (
    "Answer each of the following questions. Put each answer in \\boxed{}. "
    "Begin the answer to question i with the line ### Qi."
)


def marker(i: int) -> str:
    """The line that opens the answer to question i (1-based)."""
    return f"### Q{i}"


def build_prompt(questions: Sequence[str]) -> str:
    """One prompt for N >= 1 questions (N = 1: the single-question format, no labels)."""
    if not questions:
        raise ValueError("build_prompt needs at least one question")
    for i, q in enumerate(questions, 1):
        if not q.strip() or "\n" in q:
            raise ValueError(f"question {i} must be one non-empty line, got {q!r}")
    if len(questions) == 1:
        return f"{SINGLE_HEADER}\n{questions[0]}"
    lines = [f"Q{i}: {q}" for i, q in enumerate(questions, 1)]
    return "\n".join([MULTI_HEADER, *lines])


def join_answers(answers: Sequence[str]) -> str:
    """The response format the prompt asks for: N = 1 is the answer alone; N >= 2 puts each
    answer after its marker line (the target text of the synthetic base model)."""
    if not answers:
        raise ValueError("join_answers needs at least one answer")
    if len(answers) == 1:
        return answers[0]
    return "\n".join(f"{marker(i)}\n{a}" for i, a in enumerate(answers, 1))
