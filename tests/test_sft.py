import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.models.llama import Llama, LlamaConfig
from shared.train import latest_checkpoint_step, sft
from shared.train.sft import (
    SFTConfig,
    evaluate_sft,
    masked_next_token_loss,
    pack_pairs,
    sft_optimizer,
    train_sft,
    unpack_row,
)

TINY = LlamaConfig(16, 32, 1, 2, 2, 64, max_seq_len=32)
BOS, EOS, PAD = 1, 15, 0
TRAIN = SFTConfig(steps=60, batch_size=8, lr=1e-2)
# One optimizer object for every run here: equal model configs then share one compiled step.
TX = sft_optimizer(TRAIN)


def _reference_loss(logits, targets, mask):
    """float64 NumPy: sum of masked nll / number of masked targets (0 when there are none)."""
    logits = np.asarray(logits, np.float64)
    logp = logits - logits.max(-1, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
    total, count = 0.0, 0
    for b, t in zip(*np.nonzero(mask)):
        total -= logp[b, t, targets[b, t]]
        count += 1
    return total / max(count, 1)


def _hand_made_batch():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 5, 6)).astype(np.float32) * 2
    targets = rng.integers(0, 6, (4, 5)).astype(np.int32)
    mask = np.array(
        [
            [1, 1, 1, 1, 1],  # shortest prompt (a lone BOS): every target is a response token
            [0, 0, 1, 0, 0],  # a one-token response, then padding
            [0, 0, 0, 0, 0],  # all padding: excluded, and its garbage targets are never read
            [0, 0, 0, 1, 1],  # a response that fills the row to its last position
        ],
        np.float32,
    )
    targets[2] = [-1, 99, 6, -7, 1000]
    return logits, targets, mask


def test_masked_loss_matches_a_float64_reference_on_mask_edges():
    logits, targets, mask = _hand_made_batch()
    ours = float(masked_next_token_loss(jnp.asarray(logits), jnp.asarray(targets), mask))
    ref = _reference_loss(logits, targets, mask)
    assert ours == pytest.approx(ref, rel=2e-6)  # float32 log-softmax and an 8-term mean
    for row in range(4):  # each row alone, the all-padding one included (0, not NaN)
        alone = masked_next_token_loss(
            logits[row : row + 1], targets[row : row + 1], mask[row:][:1]
        )
        assert float(alone) == pytest.approx(
            _reference_loss(logits[row : row + 1], targets[row : row + 1], mask[row:][:1]),
            rel=2e-6,
            abs=0.0,
        )
    grads = jax.grad(masked_next_token_loss)(jnp.asarray(logits), targets, mask)
    assert np.all(np.asarray(grads)[mask == 0] == 0)  # nothing flows from prompt or padding
    empty = jax.grad(masked_next_token_loss)(jnp.asarray(logits), targets, np.zeros_like(mask))
    assert float(masked_next_token_loss(logits, targets, np.zeros_like(mask))) == 0.0
    assert np.all(np.asarray(empty) == 0)


def test_prompt_targets_change_neither_loss_nor_gradients():
    logits, targets, mask = _hand_made_batch()
    other = np.where(mask > 0, targets, (targets + 3) % 6).astype(np.int32)
    value_and_grad = jax.value_and_grad(masked_next_token_loss)
    la, ga = value_and_grad(jnp.asarray(logits), targets, mask)
    lb, gb = value_and_grad(jnp.asarray(logits), other, mask)
    assert float(la) == float(lb)
    np.testing.assert_array_equal(ga, gb)

    # through a decoder: same inputs, prompt-position targets changed -> same parameter grads
    model = Llama(TINY, rngs=nnx.Rngs(0))
    packed = pack_pairs([([BOS, 3, 4, 5], [6, 7]), ([BOS], [8, 9, 10])], 7, eos_id=EOS)
    inputs, targets = packed.tokens[:, :-1], packed.tokens[:, 1:]
    changed = np.where(packed.loss_mask > 0, targets, 13).astype(np.int32)

    @nnx.jit
    def value_and_grads(model, targets):
        loss = lambda m: masked_next_token_loss(m(inputs), targets, packed.loss_mask)
        return nnx.value_and_grad(loss)(model)

    la, ga = value_and_grads(model, targets)
    lb, gb = value_and_grads(model, changed)
    assert float(la) == float(lb)
    for x, y in zip(jax.tree.leaves(ga), jax.tree.leaves(gb)):
        np.testing.assert_array_equal(x, y)


def test_packing_round_trips_and_masks_exactly_the_response():
    rng = np.random.default_rng(1)
    pairs = [
        ([BOS, *rng.integers(2, 15, rng.integers(0, 4))], list(rng.integers(2, 15, n)))
        for n in (1, 2, 3, 4, 5, 1)
    ]
    packed = pack_pairs(pairs, 9, eos_id=EOS, pad_id=PAD)
    assert packed.tokens.shape == (6, 10) and packed.loss_mask.shape == (6, 9)
    assert packed.tokens.dtype == np.int32 and not packed.truncated.any()
    for (prompt, response), tokens, mask in zip(pairs, packed.tokens, packed.loss_mask):
        assert unpack_row(tokens, mask) == (list(prompt), [*response, EOS])
        n = len(prompt) + len(response) + 1
        assert mask.sum() == len(response) + 1
        assert np.all(tokens[n:] == PAD)
        assert np.all(mask[: len(prompt) - 1] == 0) and np.all(mask[n - 1 :] == 0)
    without_eos = pack_pairs(pairs, 9)
    assert [unpack_row(t, m)[1] for t, m in zip(without_eos.tokens, without_eos.loss_mask)] == [
        list(r) for _, r in pairs
    ]


def test_a_long_pair_names_the_fix_or_is_truncated_when_asked():
    pairs = [([BOS, 2], [3, 4]), ([BOS, 2, 3], [4, 5, 6, 7])]  # 3 + 4 + eos = 8 tokens
    with pytest.raises(ValueError, match=r"pair 1: .* = 8 tokens .*seq_len to at least 7"):
        pack_pairs(pairs, 5, eos_id=EOS)
    packed = pack_pairs(pairs, 5, eos_id=EOS, truncate=True)
    assert packed.truncated.tolist() == [False, True]
    assert unpack_row(packed.tokens[1], packed.loss_mask[1]) == ([BOS, 2, 3], [4, 5, 6])  # no eos
    assert unpack_row(packed.tokens[0], packed.loss_mask[0]) == ([BOS, 2], [3, 4, EOS])
    with pytest.raises(ValueError, match="pair 0: its prompt alone"):
        pack_pairs([([BOS] * 6, [2])], 5, truncate=True)
    with pytest.raises(ValueError, match="pair 0 has an empty prompt"):
        pack_pairs([([], [2, 3])], 5)
    with pytest.raises(ValueError, match="pair 0 has an empty response and no eos_id"):
        pack_pairs([([BOS], [])], 5)


@pytest.fixture(scope="module")
def memorizable():
    """12 distinct prompts, each with its own random response: a set a decoder can memorize."""
    rng = np.random.default_rng(2)
    pairs = [([BOS, 2 + i % 13, 2 + i // 13 % 13], list(rng.integers(2, 15, 4))) for i in range(12)]
    return pack_pairs(pairs, 8, eos_id=EOS)


def test_response_loss_falls_on_a_memorizable_set(memorizable, tmp_path):
    model = Llama(TINY, rngs=nnx.Rngs(0))
    initial = evaluate_sft(model, memorizable, batch_size=8)
    assert abs(initial - np.log(16)) < 0.1  # init std 0.02: near-uniform predictions
    train_sft(model, memorizable, TRAIN, tx=TX, workdir=tmp_path, log_every=20)
    final = evaluate_sft(model, memorizable, batch_size=8)
    # memorized rows have loss -> 0; 0.5 nats means ~60% on the right token on average
    assert final < 0.5, (initial, final)
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [20, 40, 60]
    assert all(r["response_tokens"] > 0 and r["grad_norm"] > 0 for r in records)
    assert records[-1]["loss"] < records[0]["loss"]


def test_a_killed_run_resumes_to_the_parameters_of_an_unbroken_run(
    memorizable, tmp_path, monkeypatch
):
    cfg = SFTConfig(steps=8, batch_size=8, seed=3)  # 8 of the 12 rows, reshuffled each epoch

    def train(model, workdir, **kwargs):
        return train_sft(model, memorizable, cfg, tx=TX, workdir=workdir, log_every=2, **kwargs)

    unbroken = train(Llama(TINY, rngs=nnx.Rngs(0)), tmp_path / "a")
    real_loop = sft.train_loop

    def loop_killed_at_step_6(**kwargs):
        step_fn = kwargs["step_fn"]

        def crashing(state, batch, step):
            if step == 5:
                raise KeyboardInterrupt  # stands in for a kill after the step-4 checkpoint
            return step_fn(state, batch, step)

        return real_loop(**{**kwargs, "step_fn": crashing})

    monkeypatch.setattr(sft, "train_loop", loop_killed_at_step_6)
    with pytest.raises(KeyboardInterrupt):
        train(Llama(TINY, rngs=nnx.Rngs(0)), tmp_path / "b", checkpoint_every=4)
    monkeypatch.setattr(sft, "train_loop", real_loop)
    assert latest_checkpoint_step(tmp_path / "b" / "checkpoints" / "sft") == 4
    # a fresh model of another init: everything must come from the checkpoint
    resumed = train(Llama(TINY, rngs=nnx.Rngs(1)), tmp_path / "b")
    for x, y in zip(jax.tree.leaves(nnx.state(unbroken)), jax.tree.leaves(nnx.state(resumed))):
        np.testing.assert_array_equal(x, y)

    def rows(workdir):
        lines = (workdir / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(x).items() if k != "items_per_s"} for x in lines]

    assert rows(tmp_path / "b") == rows(tmp_path / "a")
