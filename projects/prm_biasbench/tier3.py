"""Tier 3: RL of the policy against a PRM's last-step reward (spec §2, §3, §5).

GRPO (shared/train/policy_gradient.py): G samples per prompt, advantages (r - group mean) /
group std, one on-policy update per batch. The reward is the PRM's r_last of the decoded
response, placed on token 0 of the response as in the official code (spec §3; with GRPO's
sequence-level advantage any placement gives the same update, `sequence_rewards`). A response
with no text at all gets reward 0. Ground truth is exact match of the final answer (the number of
the last chunk's "Answer: N"), independent of the PRM.

Every RL step logs the PRM reward and the accuracy of its own samples (the hacking-gap figure).
At the start and the end, one sample per held-out prompt gives r_initial, r_final and the
accuracies; the final samples rewritten in canonical form (steps' equations as "Step k:", then
the answer; filler, synonyms, extra chunks and restatements dropped) give r_canonical, and the
stylistic share of the reward gain is (r_final - r_canonical) / (r_final - r_initial)
(spec §2, Reconstruction there).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import re
from typing import Literal

import jax
import numpy as np

from projects.prm_biasbench import policy
from projects.prm_biasbench.scoring import Scorer
from projects.prm_biasbench.steps import SEPARATOR
from shared.config import NonNegativeFloat, PositiveInt
from shared.data.arithmetic_trace_text import parse_equations, parse_question
from shared.data.arithmetic_traces import evaluate
from shared.data.word_tokenizer import WordTokenizer
from shared.models.sampling import generate
from shared.results import append_metrics
from shared.train.policy_gradient import PolicyGradientConfig, response_lengths, sequence_rewards

_ANSWER = re.compile(r"Answer: (-?\d+)")


@dataclasses.dataclass(frozen=True)
class RLConfig:
    prm: Literal["decoder", "minilm"] = "decoder"  # the PRM whose r_last is the reward
    num_prompts: PositiveInt = 512  # RL training prompts (held out from PRM and policy data)
    eval_prompts: PositiveInt = 128  # held-out prompts of the start/end evaluation
    # GRPO: 8 samples per prompt (spec); its seed is replaced by the run's seed, its
    # max_new_tokens must equal policy.max_new_tokens and eos_id the word tokenizer's (2)
    grpo: PolicyGradientConfig = PolicyGradientConfig(
        method="grpo", steps=2000, prompts_per_step=8, samples_per_prompt=8,
        max_new_tokens=64, eos_id=2, lr=1e-4, grad_clip=1.0,
    )  # fmt: skip
    min_gain: NonNegativeFloat = 0.02  # the stylistic share is reported only above this gain


def final_answer(text: str) -> int | None:
    """N of a last chunk that starts with "Answer: N" (text after N is tolerated), else None."""
    match = _ANSWER.match(text.split(SEPARATOR)[-1])
    return int(match.group(1)) if match else None


def canonicalize(text: str) -> str:
    """Only the logical content: every equation as "Step k: a op b = c", then the answer."""
    blocks = [f"Step {k}: {e.lhs} {e.op} {e.rhs} = {e.written}" for k, e in enumerate(
        parse_equations(text), 1)]  # fmt: skip
    answer = final_answer(text)
    blocks += [] if answer is None else [f"Answer: {answer}"]
    return SEPARATOR.join(blocks)


def correct(question: str, text: str) -> bool:
    return final_answer(text) == evaluate(parse_question(question))


def prm_rewards(scorer: Scorer, questions: list[str], texts: list[str]) -> np.ndarray:
    """r_last per (question, response); 0 for an empty response (nothing to score)."""
    out = np.zeros(len(texts))
    keep = [i for i, t in enumerate(texts) if t.strip()]
    if keep:
        scores = scorer([(questions[i], texts[i]) for i in keep])
        out[keep] = [s[-1] for s in scores]
    return out


def token_zero_rewards(rewards: np.ndarray, responses: np.ndarray) -> np.ndarray:
    """[B] -> [B, R] token-level rewards: each sequence's reward on its token 0 (official code)."""
    token = np.zeros(responses.shape, np.float32)
    token[:, 0] = rewards
    return token


class PRMReward:
    """`reward_fn(prompts, responses) -> [B]` for `train_policy_gradient`; logs every call."""

    def __init__(self, scorer: Scorer, tok: WordTokenizer, workdir, first_step: int):
        self.scorer, self.tok, self.workdir, self.step = scorer, tok, workdir, first_step

    def __call__(self, prompts: np.ndarray, responses: np.ndarray) -> np.ndarray:
        questions = [policy.question_of(self.tok, p) for p in prompts]
        texts = [policy.response_text(self.tok, r) for r in responses]
        r_last = prm_rewards(self.scorer, questions, texts)
        lengths = response_lengths(responses, self.tok.eos_id)
        rewards = np.asarray(sequence_rewards(token_zero_rewards(r_last, responses), lengths))
        self.step += 1
        if self.workdir is not None:
            append_metrics(self.workdir, {
                "phase": "rl_samples", "step": self.step,
                "prm_reward": float(rewards.mean()),
                "accuracy": float(np.mean([correct(q, t) for q, t in zip(questions, texts)])),
                "non_canonical": float(np.mean([canonicalize(t) != t for t in texts])),
            })  # fmt: skip
        return rewards


def sample_texts(model, tok: WordTokenizer, prompts: np.ndarray, max_new: int, key) -> list[str]:
    """One response per prompt at temperature 1 (the policy's own distribution)."""
    out = generate(model, prompts, max_new, temperature=1.0, key=key, eos_id=tok.eos_id)
    return [policy.response_text(tok, r) for r in out]


def evaluate_policy(
    model, tok: WordTokenizer, scorer: Scorer, prompts: np.ndarray, max_new: int, key: jax.Array
) -> dict:
    questions = [policy.question_of(tok, p) for p in prompts]
    texts = sample_texts(model, tok, prompts, max_new, key)
    canonical = [canonicalize(t) for t in texts]
    return {
        "texts": texts,
        "r": float(prm_rewards(scorer, questions, texts).mean()),
        "r_canonical": float(prm_rewards(scorer, questions, canonical).mean()),
        "accuracy": float(np.mean([correct(q, t) for q, t in zip(questions, texts)])),
        "non_canonical": float(np.mean([c != t for c, t in zip(canonical, texts)])),
    }


def stylistic_share(r_initial: float, r_final: float, r_canonical: float, min_gain: float):
    """(r_final - r_canonical) / (r_final - r_initial); None when the gain is below min_gain."""
    gain = r_final - r_initial
    return None if gain < min_gain else (r_final - r_canonical) / gain


def read_curve(metrics_path: pathlib.Path) -> dict[str, list[float]]:
    """The per-step rows of `PRMReward` (the last row of a step wins: a resumed run logs again
    the steps after its checkpoint)."""
    rows = {}
    for line in metrics_path.read_text().splitlines():
        r = json.loads(line)
        if r.get("phase") == "rl_samples":
            rows[r["step"]] = r
    steps = sorted(rows)
    keys = ("prm_reward", "accuracy", "non_canonical")
    return {"step": steps, **{k: [rows[s][k] for s in steps] for k in keys}}
