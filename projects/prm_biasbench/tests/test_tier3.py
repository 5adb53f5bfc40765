"""Tier-3 wiring (spec §6): the reward sits on token 0, GRPO advantages are normalized within
each prompt's group; canonical rewriting, exact match and the stylistic share."""

import jax
import numpy as np
import pytest

from projects.prm_biasbench import perturbations, policy, tier3
from projects.prm_biasbench.tests.conftest import SMALL
from shared.data.arithmetic_trace_text import render_prm
from shared.train.policy_gradient import (
    PolicyGradientConfig,
    grpo_advantages,
    sequence_rewards,
    train_policy_gradient,
)


def test_the_reward_sits_on_token_zero_and_sums_to_the_sequence_reward():
    responses = np.array([[5, 6, 2, 0], [7, 2, 0, 0], [2, 0, 0, 0]])
    r = np.array([0.9, 0.2, 0.5])
    token = tier3.token_zero_rewards(r, responses)
    assert (token[:, 0] == r.astype(np.float32)).all() and (token[:, 1:] == 0).all()
    lengths = np.array([3, 2, 1])  # an immediate eos still carries its reward
    np.testing.assert_allclose(sequence_rewards(token, lengths), r, rtol=1e-7)


def test_prm_reward_scores_the_decoded_response(decoder_prm, word_tok, solutions):
    _, _, scorer, _ = decoder_prm
    clean, slips = solutions
    examples = clean[:2] + slips[:2]
    prompts = policy.prompts(word_tok, [e.question for e in examples], 32)
    width = 48
    responses = np.full((len(examples), width), word_tok.pad_id, np.int32)
    for i, e in enumerate(examples):
        ids = [*word_tok.encode(e.solution), word_tok.eos_id]
        responses[i, : len(ids)] = ids
    responses[-1, :] = word_tok.eos_id  # an empty response: reward 0
    got = tier3.PRMReward(scorer, word_tok, None, 0)(prompts, responses)
    want = [s[-1] for s in scorer([(e.question, e.solution) for e in examples[:-1]])]
    np.testing.assert_allclose(got[:-1], want, atol=1e-6)
    assert got[-1] == 0.0
    assert policy.question_of(word_tok, prompts[0]) == examples[0].question


def test_grpo_groups_are_the_samples_of_one_prompt(decoder_prm, word_tok, solutions):
    """One GRPO step through the shared loop: rows g*G..g*G+G-1 carry prompt g, and the
    advantages are (r - group mean) / (group std + eps), computed per group."""
    model, _, _, _ = decoder_prm
    from flax import nnx

    from shared.models.llama import Llama, LlamaConfig

    policy_model = Llama(LlamaConfig(word_tok.vocab_size, 16, 1, 2, 2, 32, max_seq_len=48),
                         rngs=nnx.Rngs(0))  # fmt: skip
    prompts = np.arange(3 * 4).reshape(3, 4).astype(np.int32) + 5
    seen = []

    def sample_fn(m, group_prompts, key):
        seen.append(group_prompts)
        return np.full((len(group_prompts), 2), 6, np.int32), np.full(len(group_prompts), 2)

    def reward_fn(group_prompts, responses):
        return group_prompts[:, 0].astype(np.float32) + np.arange(len(group_prompts)) % 3

    cfg = PolicyGradientConfig(steps=1, prompts_per_step=2, samples_per_prompt=3,
                               max_new_tokens=2)  # fmt: skip
    train_policy_gradient(policy_model, prompts, reward_fn, cfg, sample_fn=sample_fn)
    rows = seen[0]
    assert len(rows) == 6 and (rows[0] == rows[1]).all() and (rows[1] == rows[2]).all()
    assert not (rows[2] == rows[3]).all()
    r = reward_fn(rows, None).reshape(2, 3).astype(np.float64)
    want = (r - r.mean(1, keepdims=True)) / (r.std(1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(grpo_advantages(r), want, rtol=1e-5)


@pytest.mark.parametrize("kind", perturbations.STYLE)
def test_canonical_form_undoes_every_style_perturbation(kind):
    from shared.data.arithmetic_traces import sample_trace

    for i in range(10):
        t = sample_trace(np.random.default_rng(i), SMALL)
        text = perturbations.perturb(
            kind, t.problem, render_prm(t), np.random.default_rng(i), SMALL
        )
        assert tier3.canonicalize(text) == render_prm(t)
        assert tier3.canonicalize(render_prm(t)) == render_prm(t)


def test_final_answer_and_exact_match():
    q = "Start with 17. Add 25."
    assert tier3.final_answer("Step 1: 17 + 25 = 42\n\nAnswer: 42") == 42
    assert tier3.final_answer("Step 1: 17 + 25 = 42\n\nAnswer: 42 good good") == 42
    assert tier3.final_answer("Answer: 42\n\nStep 1: 17 + 25 = 42") is None  # not the last
    assert tier3.final_answer("") is None
    assert tier3.correct(q, "Answer: 42") and not tier3.correct(q, "Answer: 43")
    assert tier3.canonicalize("good good") == ""


def test_stylistic_share():
    assert tier3.stylistic_share(0.3, 0.9, 0.6, 0.02) == pytest.approx(0.5)
    assert tier3.stylistic_share(0.3, 0.9, 0.9, 0.02) == 0.0  # all gain survives rewriting
    assert tier3.stylistic_share(0.5, 0.51, 0.4, 0.02) is None  # no gain to explain


def test_sampled_texts_come_from_the_policy(word_tok):
    from flax import nnx

    from shared.models.llama import Llama, LlamaConfig

    model = Llama(LlamaConfig(word_tok.vocab_size, 16, 1, 2, 2, 32, max_seq_len=48),
                  rngs=nnx.Rngs(0))  # fmt: skip
    prompts = policy.prompts(word_tok, ["Start with 3. Add 4. Add 1."], 16)
    a = tier3.sample_texts(model, word_tok, prompts, 8, jax.random.key(0))
    b = tier3.sample_texts(model, word_tok, prompts, 8, jax.random.key(0))
    assert a == b and isinstance(a[0], str)
    with pytest.raises(ValueError, match="prompt_len"):
        policy.prompts(word_tok, ["Start with 3. Add 4. Add 1."], 4)
