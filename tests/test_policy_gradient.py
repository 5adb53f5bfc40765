import dataclasses
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.models.llama import Llama, LlamaConfig
from shared.train import latest_checkpoint_step
from shared.train import policy_gradient as pg
from shared.train.policy_gradient import (
    PolicyGradientConfig,
    generate_sampler,
    grpo_advantages,
    policy_gradient_loss,
    policy_gradient_optimizer,
    reinforce_advantages,
    response_lengths,
    response_log_probs,
    sequence_log_probs,
    sequence_rewards,
    train_policy_gradient,
)

TINY = LlamaConfig(16, 32, 1, 2, 2, 64, max_seq_len=32)
# 256 prompts: grain's index shuffle costs ~1 ms per row on a 32-row set, ~0.1 ms here
PROMPTS = np.random.default_rng(0).integers(0, 16, (256, 3)).astype(np.int32)
# Both toy runs sample 64 responses of 3 tokens per step and share one optimizer object, so
# they share the compiled update.
GRPO = PolicyGradientConfig("grpo", 50, prompts_per_step=8, samples_per_prompt=8,
                            max_new_tokens=3, lr=1e-2)  # fmt: skip
REINFORCE = PolicyGradientConfig("reinforce", 50, prompts_per_step=16, samples_per_prompt=4,
                                 max_new_tokens=3, lr=1e-2)  # fmt: skip
TX = policy_gradient_optimizer(GRPO)


def _grpo_reference(rewards, eps=1e-6):
    """float64 NumPy: (r - mean) / (population std + eps) per row; 0 for rows of equal rewards."""
    r = np.asarray(rewards, np.float64)
    out = np.zeros_like(r)
    for i, row in enumerate(r):
        if row.max() > row.min():
            out[i] = (row - row.mean()) / (row.std(ddof=0) + eps)
    return out


def test_grpo_advantages_match_a_float64_reference_on_edge_cases():
    rewards = np.array(
        [
            [0.1, 0.1, 0.1, 0.1],  # all equal (0.1 is inexact: mean - r is rounding noise)
            [0.0, 0.0, 0.0, 0.0],  # all equal at zero
            [1.0, 0.0, 0.0, 0.0],  # one success among failures
            [0.3, -1.2, 2.5, 0.7],  # mixed continuous rewards
            [1.0, 1.0, 1.0, 1.0 + 2**-20],  # a spread far below eps: advantages stay small
        ],
        np.float32,
    )
    ours = np.asarray(grpo_advantages(rewards))
    np.testing.assert_allclose(ours, _grpo_reference(rewards), rtol=1e-5, atol=1e-6)
    assert np.all(ours[:2] == 0.0)  # exactly: these groups teach nothing
    np.testing.assert_allclose(
        ours[2], [np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3)], rtol=1e-5
    )
    np.testing.assert_allclose(ours.sum(1), 0.0, atol=1e-5)  # a group's advantages sum to 0
    with pytest.raises(ValueError, match="G >= 2 samples per prompt"):
        grpo_advantages(np.ones((3, 1), np.float32))  # groups of one
    with pytest.raises(ValueError, match=r"\[num_prompts, G\]"):
        grpo_advantages(np.ones(4, np.float32))  # flat rewards: the grouping is not known


def test_reinforce_advantages_subtract_the_batch_mean_or_the_given_baseline():
    r = np.array([1.0, 0.0, 0.5, 0.25], np.float32)
    np.testing.assert_allclose(reinforce_advantages(r), r - r.mean(), rtol=1e-6)
    np.testing.assert_allclose(reinforce_advantages(r, 0.3), r - 0.3, rtol=1e-6)


def test_surrogate_gradient_is_the_score_function_estimate_on_a_categorical():
    """A one-token policy with logits theta [V]: the loss's gradient must be
    -(1/B) sum_b A_b (onehot(a_b) - softmax(theta)), computed by hand in float64."""
    rng = np.random.default_rng(3)
    theta = rng.standard_normal(5).astype(np.float32)
    actions = np.array([0, 3, 3, 1, 4, 2])
    rewards = rng.uniform(size=6).astype(np.float32)
    probs = np.exp(theta.astype(np.float64)) / np.exp(theta.astype(np.float64)).sum()
    score = np.eye(5)[actions] - probs  # grad of log p(a_b), one row per sample

    @functools.partial(jax.jit, static_argnums=2)
    @jax.grad
    def grad(theta, baseline, scale):
        logp = jax.nn.log_softmax(theta)[actions][:, None]  # [B, R=1]
        # `scale` lets the advantage depend on theta: it must still act as a constant
        advantages = reinforce_advantages(rewards, baseline) * scale(theta)
        return policy_gradient_loss(logp, advantages)

    one = lambda t: 1.0
    for baseline, b in ((None, rewards.mean()), (0.3, 0.3)):
        expected = -np.mean((rewards.astype(np.float64) - b)[:, None] * score, axis=0)
        np.testing.assert_allclose(grad(theta, baseline, one), expected, rtol=1e-5, atol=1e-7)
    s = float(np.sum(theta))
    expected = -np.mean((rewards.astype(np.float64) - rewards.mean())[:, None] * s * score, 0)
    np.testing.assert_allclose(grad(theta, None, jnp.sum), expected, rtol=1e-5, atol=1e-7)


def test_expected_surrogate_gradient_is_the_gradient_of_the_expected_reward():
    """Every action once, weighted by its probability: sum_a p_a r_a grad log p_a equals
    grad sum_a p_a r_a (the score-function identity, sign and scale included)."""
    rng = np.random.default_rng(4)
    theta, r = rng.standard_normal(5).astype(np.float32), rng.uniform(size=5).astype(np.float32)
    weights = 5 * jax.nn.softmax(theta) * r  # the loss's mean over 5 rows, times 5: a sum

    surrogate = jax.jit(
        jax.grad(lambda t: policy_gradient_loss(jax.nn.log_softmax(t)[:, None], weights))
    )
    expected_reward = jax.jit(jax.grad(lambda t: -jnp.sum(jax.nn.softmax(t) * r)))
    np.testing.assert_allclose(surrogate(theta), expected_reward(theta), rtol=1e-5, atol=1e-7)


@pytest.fixture(scope="module")
def model():
    return Llama(TINY, rngs=nnx.Rngs(0))


def test_response_log_probs_match_prefix_by_prefix_decoding_and_ignore_padding(model):
    prompts = jnp.asarray(PROMPTS[:2])
    responses = jnp.asarray([[7, 3, 9, 2], [5, 11, 4, 4]], jnp.int32)
    lengths = jnp.asarray([4, 2])
    logp = np.asarray(nnx.jit(response_log_probs)(model, prompts, responses, lengths))
    # reference: each valid prefix (prompt + response[:t]) as its own row, right-padded to one
    # width (causal: padding after a position cannot change it), read at its last real position
    cases = [(b, t) for b in range(2) for t in range(int(lengths[b]))]
    rows = np.zeros((len(cases), 7), np.int32)
    for i, (b, t) in enumerate(cases):
        rows[i, : 3 + t] = np.concatenate([prompts[b], responses[b, :t]])
    logits = nnx.jit(lambda m, x: m(x))(model, jnp.asarray(rows))
    for i, (b, t) in enumerate(cases):
        ref = jax.nn.log_softmax(np.asarray(logits[i, 2 + t], np.float64))[responses[b, t]]
        assert logp[b, t] == pytest.approx(float(ref), rel=1e-5, abs=1e-6)
    assert logp[1, 2] == 0.0 and logp[1, 3] == 0.0  # past row 1's length
    whole = nnx.jit(sequence_log_probs)(model, prompts, responses, lengths)
    np.testing.assert_allclose(whole, logp.sum(1), rtol=1e-6)

    @nnx.jit
    def loss_and_grads(model, responses):
        loss = lambda m: policy_gradient_loss(
            response_log_probs(m, prompts, responses, lengths), jnp.asarray([1.0, -0.5])
        )
        return nnx.value_and_grad(loss)(model)

    padded_differently = responses.at[1, 2:].set(13)  # row 1's tokens past its length 2
    la, ga = loss_and_grads(model, responses)
    lb, gb = loss_and_grads(model, padded_differently)
    assert float(la) == float(lb)
    for x, y in zip(jax.tree.leaves(ga), jax.tree.leaves(gb)):
        np.testing.assert_array_equal(x, y)


def test_outcome_reward_on_token_0_equals_it_on_the_last_token():
    """The official PRM code's placement (token 0) and the last token give the same sequence
    reward, hence the same GRPO advantages."""
    outcome = np.array([0.9, 0.2, 0.5, 0.5, 0.1, 0.7], np.float32)
    lengths = np.array([3, 1, 4, 2, 4, 3])
    first, last = np.zeros((6, 4), np.float32), np.zeros((6, 4), np.float32)
    first[:, 0] = outcome
    last[np.arange(6), lengths - 1] = outcome
    first[:, 3] += 5.0 * (lengths < 4)  # rewards on padding are never counted
    a, b = sequence_rewards(first, lengths), sequence_rewards(last, lengths)
    np.testing.assert_array_equal(a, outcome)
    np.testing.assert_array_equal(b, outcome)
    np.testing.assert_array_equal(
        grpo_advantages(a.reshape(3, 2)), grpo_advantages(b.reshape(3, 2))
    )


def test_response_lengths_stop_at_the_first_eos():
    responses = np.array([[3, 0, 0], [0, 0, 0], [4, 5, 6], [4, 5, 0]])
    assert response_lengths(responses, 0).tolist() == [2, 1, 3, 3]
    assert response_lengths(responses, None).tolist() == [3, 3, 3, 3]


def test_the_default_sampler_pads_with_eos_and_counts_it_in_the_length(model):
    prompts = np.repeat(PROMPTS[:8], 8, axis=0)  # the toy runs' shape [64, 3]: one compile
    responses, lengths = generate_sampler(3, eos_id=5)(model, prompts, jax.random.key(0))
    assert responses.shape == (64, 3)
    assert 0 < np.sum(lengths < 3)  # near-uniform over 16 ids: ~1 - (15/16)^2 of rows end early
    for row, n in zip(responses, lengths):
        assert np.all(row[n:] == 5) and (row[n - 1] == 5 or n == 3) and 5 not in row[: n - 1]


@nnx.jit
def _probability_of_7(model):
    """Mean over PROMPTS of the exact probability that the first response token is 7."""
    return jnp.mean(jax.nn.softmax(model(jnp.asarray(PROMPTS))[:, -1], axis=-1)[:, 7])


def _toy_run(cfg, reward_fn, tmp_path):
    model = Llama(TINY, rngs=nnx.Rngs(1))
    before = float(_probability_of_7(model))
    train_policy_gradient(model, PROMPTS, reward_fn, cfg, tx=TX, workdir=tmp_path,
                          checkpoints=False, log_every=10)  # fmt: skip
    rows = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    return before, float(_probability_of_7(model)), rows


# Threshold, chosen before running: the optimum is p(7) = 1. GRPO stops learning only where whole
# groups are all 7s (probability p^8: 0.43 at p = 0.9), REINFORCE only where the whole batch is,
# so neither stalls below 0.9; Adam at 1e-2 moves the 7-logit by about lr * sum|h| ~ 0.25 nats per
# step, and the ~5 nats from 1/16 to 0.9 take ~20 steps; 50 steps leave a wide margin.
def test_grpo_learns_to_emit_token_7(tmp_path):
    first_is_7 = lambda prompts, responses: (responses[:, 0] == 7).astype(np.float32)
    before, after, rows = _toy_run(GRPO, first_is_7, tmp_path)
    assert abs(before - 1 / 16) < 0.01  # init std 0.02: near-uniform
    assert after > 0.9, (before, after)
    assert rows[0]["zero_spread_groups"] > 0  # early on, groups without a 7 teach nothing
    assert rows[-1]["reward"] > rows[0]["reward"]


def test_reinforce_with_a_baseline_learns_to_emit_token_7(tmp_path):
    share_of_7s = lambda prompts, responses: (responses == 7).mean(1).astype(np.float32)
    before, after, rows = _toy_run(REINFORCE, share_of_7s, tmp_path)
    assert after > 0.9, (before, after)
    assert rows[-1]["reward"] > 0.9 > rows[0]["reward"]
    assert all(r["response_len"] == 3 for r in rows)


def test_a_killed_rl_run_resumes_to_the_parameters_of_an_unbroken_run(tmp_path, monkeypatch):
    cfg = PolicyGradientConfig("grpo", 6, prompts_per_step=8, samples_per_prompt=8,
                               max_new_tokens=3, seed=4)  # fmt: skip
    reward = lambda prompts, responses: (responses == 7).mean(1).astype(np.float32)

    def train(workdir, init_seed, **kwargs):
        model = Llama(TINY, rngs=nnx.Rngs(init_seed))
        return train_policy_gradient(model, PROMPTS, reward, cfg, tx=TX, workdir=workdir,
                                     log_every=2, **kwargs)  # fmt: skip

    unbroken = train(tmp_path / "a", 0)
    real_loop = pg.train_loop

    def loop_killed_at_step_5(**kwargs):
        step_fn = kwargs["step_fn"]

        def crashing(state, batch, step):
            if step == 4:
                raise KeyboardInterrupt  # a kill after the step-4 checkpoint
            return step_fn(state, batch, step)

        return real_loop(**{**kwargs, "step_fn": crashing})

    monkeypatch.setattr(pg, "train_loop", loop_killed_at_step_5)
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "b", 0, checkpoint_every=4)
    monkeypatch.setattr(pg, "train_loop", real_loop)
    assert latest_checkpoint_step(tmp_path / "b" / "checkpoints" / "pg") == 4
    resumed = train(tmp_path / "b", 1)  # another init: the parameters come from the checkpoint
    for x, y in zip(jax.tree.leaves(nnx.state(unbroken)), jax.tree.leaves(nnx.state(resumed))):
        np.testing.assert_array_equal(x, y)


def test_bad_rewards_and_groups_are_refused_naming_the_step(model):
    cfg = dataclasses.replace(GRPO, steps=2)  # the toy runs' shapes: their compiled sampler
    with pytest.raises(ValueError, match=r"pg step 1: reward_fn returned shape \(2,\).*\[64\]"):
        train_policy_gradient(model, PROMPTS, lambda p, r: np.zeros(2), cfg, log_every=1)
    with pytest.raises(ValueError, match="pg step 1: reward_fn returned non-finite"):
        train_policy_gradient(model, PROMPTS, lambda p, r: np.full(64, np.nan), cfg)
    one = PolicyGradientConfig("grpo", 2, prompts_per_step=2, samples_per_prompt=1)
    with pytest.raises(ValueError, match="samples_per_prompt >= 2"):
        train_policy_gradient(model, PROMPTS, lambda p, r: np.zeros(2), one)
