"""Batched KV-cache generation (shared/models/generation.py) against uncached decoding, and the
token sampler's filters (shared/models/token_sampler.py) against float64 NumPy references."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.models.attention import dot_product_attention
from shared.models.generation import (
    extend,
    generate_batch,
    left_pad,
    next_token_log_probs,
    prefill,
)
from shared.models.llama import Llama, LlamaConfig
from shared.models.token_sampler import Sampler, choose_tokens, top_k_filter, top_p_filter

# Grouped-query heads; init std 0.3 spreads the logits (top-2 gaps >~ 5e-3, far above float32
# error) so greedy choices are stable, and sampling at temperature 1 is far from uniform.
CFG = LlamaConfig(61, 32, 2, 4, 2, 64, max_seq_len=64, init_std=0.3)
# Lengths 6, 2, 4, 3 and NEW new tokens: the uncached reference compiles one forward per
# sequence length (2..9), and most tests share one compiled generation loop (batch 4, length 6).
PROMPTS = [[5, 9, 2, 40, 7, 1], [3, 17], [8, 8, 30, 2], [60, 1, 4]]
NEW = 4


@functools.cache
def _model(cfg=CFG) -> Llama:
    return Llama(cfg, rngs=nnx.Rngs(0))


@functools.cache
def _full_forward(model: Llama):
    """tokens [1, T] -> logits [T, V]: the cache-free forward, no padding."""
    graphdef, state = nnx.split(model)
    fwd = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))
    return lambda seq: np.asarray(fwd(state, jnp.asarray([seq], jnp.int32))[0])


def _uncached(model, prompt, tokens):
    """Next-token logits [len(tokens) + 1, V] after prompt + tokens[:i], i = 0..len(tokens),
    each by a full forward of the growing unpadded sequence."""
    fwd = _full_forward(model)
    return np.stack([fwd(prompt + list(tokens[:i]))[-1] for i in range(len(tokens) + 1)])


def _uncached_greedy(model, prompt, n):
    seq = list(prompt)
    for _ in range(n):
        seq.append(int(_full_forward(model)(seq)[-1].argmax()))
    return seq[len(prompt) :]


def _log_softmax64(logits):
    z = np.asarray(logits, np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_greedy_batch_equals_uncached_greedy_row_by_row():
    model = _model()
    out = generate_batch(model, PROMPTS, NEW)
    assert out.tokens.shape == (4, NEW) and out.tokens.dtype == np.int32
    np.testing.assert_array_equal(out.lengths, [NEW] * 4)
    for row, prompt in enumerate(PROMPTS):
        want = _uncached_greedy(model, prompt, NEW)
        np.testing.assert_array_equal(out.tokens[row], want, err_msg=f"row {row}")
        # log pi(token) from the raw logits of the uncached forward
        logp = _log_softmax64(_uncached(model, prompt, want[:-1]))[np.arange(NEW), want]
        np.testing.assert_allclose(out.logprobs[row], logp, atol=1e-5)


def test_cached_logits_equal_the_uncached_last_position_logits():
    """prefill + extend (what the loop runs) with left padding, teacher-forced: every step's
    logits [V] equal the full forward's last-position logits of that row, unpadded."""
    model = _model()
    graphdef, state = nnx.split(model)

    @jax.jit
    def run(state, tokens, pads, forced):
        m = nnx.merge(graphdef, state)
        logits, cache, valid = prefill(m, tokens, pads, tokens.shape[1] + forced.shape[1])
        steps = [logits]
        for j in range(forced.shape[1]):
            logits, cache = extend(m, cache, forced[:, j], pads, valid)
            steps.append(logits)
        return jnp.stack(steps, 1)  # [B, 1 + forced, V]

    tokens, pads = left_pad(PROMPTS, pad_id=0)
    forced = np.asarray(jax.random.randint(jax.random.key(5), (4, NEW), 0, CFG.vocab_size))
    cached = np.asarray(run(state, tokens, pads, forced))
    for row, prompt in enumerate(PROMPTS):
        want = _uncached(model, prompt, forced[row])
        # float32 logits of magnitude ~5 through a different summation order
        np.testing.assert_allclose(cached[row], want, atol=2e-5, rtol=0, err_msg=f"row {row}")


def test_cache_free_forward_with_padding_equals_each_unpadded_row():
    """The decoder's positions/key_valid on the cache-free path (e.g. scoring rollouts)."""
    model = _model()
    tokens, pads = left_pad(PROMPTS, pad_id=0)
    valid = np.arange(tokens.shape[1])[None, :] >= pads[:, None]
    positions = np.maximum(np.arange(tokens.shape[1])[None, :] - pads[:, None], 0)
    fwd = nnx.jit(lambda m, x, p, v: m(x, positions=p, key_valid=v))
    logits = np.asarray(fwd(model, tokens, positions, valid))
    assert np.isfinite(logits).all()  # pad queries see no key, and stay finite
    for row, prompt in enumerate(PROMPTS):
        want = _full_forward(model)(prompt)
        np.testing.assert_allclose(logits[row, pads[row] :], want, atol=2e-5, rtol=0)


def test_each_row_stops_at_its_own_eos_and_pads_after_it():
    """pad_id 99 lies outside the vocabulary (61): it must never reach the embedding."""
    model = _model()
    greedy = generate_batch(model, PROMPTS, NEW)
    eos = int(greedy.tokens[0, 2])  # row 0 emits it at step 2
    out = generate_batch(model, PROMPTS, NEW, eos_id=eos, pad_id=99)
    for row in range(len(PROMPTS)):
        hits = np.flatnonzero(greedy.tokens[row] == eos)
        n = int(hits[0]) + 1 if hits.size else NEW
        assert out.lengths[row] == n, row
        np.testing.assert_array_equal(out.tokens[row, :n], greedy.tokens[row, :n])
        assert (out.tokens[row, n:] == 99).all() and (out.logprobs[row, n:] == 0).all()
        np.testing.assert_array_equal(out.logprobs[row, :n], greedy.logprobs[row, :n])
    assert out.lengths[0] == 3
    # Every row ends at step 0, so the loop exits at once; prompt_len keeps the shape (4, 6).
    first = int(greedy.tokens[1, 0])
    early = generate_batch(model, [PROMPTS[1]] * 4, NEW, eos_id=first, pad_id=99, prompt_len=6)
    np.testing.assert_array_equal(early.tokens, [[first] + [99] * (NEW - 1)] * 4)
    np.testing.assert_array_equal(early.lengths, [1] * 4)
    np.testing.assert_array_equal(early.logprobs[:, 0], greedy.logprobs[1, 0])


def test_top_p_near_zero_equals_greedy():
    model = _model()
    greedy = generate_batch(model, PROMPTS, NEW).tokens
    nucleus = Sampler(temperature=1.0, top_p=1e-6)
    out = generate_batch(model, PROMPTS, NEW, sampler=nucleus, key=jax.random.key(7))
    np.testing.assert_array_equal(out.tokens, greedy)


def test_top_k_one_equals_argmax():
    logits = jax.random.normal(jax.random.key(0), (16, 61))
    got = choose_tokens(logits, Sampler(temperature=2.0, top_k=1), jax.random.key(1))
    np.testing.assert_array_equal(got, np.asarray(logits).argmax(-1))


def test_sampling_is_fixed_by_the_key_and_changes_with_it():
    model = _model()
    run = functools.partial(  # 2 samples per prompt: the loop compiled for the next test
        generate_batch, model, PROMPTS, NEW, sampler=Sampler(temperature=1.0), num_samples=2
    )
    a, b, c = (run(key=jax.random.key(s)) for s in (1, 1, 2))
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.logprobs, b.logprobs)
    assert (a.tokens != c.tokens).mean() > 0.5  # broad distributions over 61 tokens
    with pytest.raises(ValueError, match="PRNG key"):
        generate_batch(model, PROMPTS, NEW, sampler=Sampler(temperature=1.0))


def test_sampled_tokens_respect_the_filters_and_carry_temperature_one_logprobs():
    """Temperature 0.7, top-k 8, top-p 0.8: every token lies in the filtered support of the
    uncached logits, and its log-prob is that of the raw logits (temperature 1)."""
    model = _model()
    sampler = Sampler(temperature=0.7, top_p=0.8, top_k=8)
    out = generate_batch(model, PROMPTS, NEW, sampler=sampler, key=jax.random.key(3))
    for row, prompt in enumerate(PROMPTS):
        raw = _uncached(model, prompt, out.tokens[row, :-1])
        support = np.isfinite(_np_top_p(_np_top_k(raw / 0.7, 8), 0.8))
        assert support[np.arange(NEW), out.tokens[row]].all(), row
        logp = _log_softmax64(raw)[np.arange(NEW), out.tokens[row]]
        np.testing.assert_allclose(out.logprobs[row], logp, atol=1e-5)


def test_draws_follow_the_filtered_distribution():
    """20,000 draws from one row of logits: frequencies match softmax(top_p(top_k(z / T)))."""
    logits = jnp.asarray(np.random.default_rng(0).normal(0, 1.5, 12), jnp.float32)
    sampler = Sampler(temperature=0.8, top_p=0.85, top_k=6)
    n = 20_000
    draws = choose_tokens(jnp.tile(logits, (n, 1)), sampler, jax.random.key(0))
    freq = np.bincount(np.asarray(draws), minlength=12) / n
    z = _np_top_p(_np_top_k(np.asarray(logits, np.float64)[None] / 0.8, 6), 0.85)[0]
    prob = np.exp(_log_softmax64(z))
    assert (freq[prob == 0] == 0).all()
    sigma = np.sqrt(prob * (1 - prob) / n)
    assert (np.abs(freq - prob) <= 4.5 * sigma + 1e-12).all(), (freq, prob)


def test_num_samples_repeats_each_prompt_row_major():
    model = _model()
    greedy = generate_batch(model, PROMPTS, NEW)
    rep = generate_batch(model, PROMPTS, NEW, num_samples=2)
    np.testing.assert_array_equal(rep.tokens, np.repeat(greedy.tokens, 2, 0))
    np.testing.assert_array_equal(rep.logprobs, np.repeat(greedy.logprobs, 2, 0))
    sampled = generate_batch(
        model, PROMPTS, NEW, sampler=Sampler(1.0), key=jax.random.key(0), num_samples=2
    )
    assert sampled.tokens.shape == (8, NEW)
    assert (sampled.tokens[0::2] != sampled.tokens[1::2]).any(1).all()  # samples differ


def test_the_loop_compiles_once_per_shape_not_per_step():
    """A counting attention function runs at trace time only: a trace of the prefill and of
    the loop body calls it once per layer each, and the NEW steps do not add calls."""
    calls = []

    def counting_attention(q, k, v, mask):
        calls.append(q.shape[1])
        return dot_product_attention(q, k, v, mask)

    model = Llama(CFG, rngs=nnx.Rngs(0), attention_fn=counting_attention)
    run = functools.partial(generate_batch, model, max_new_tokens=NEW, prompt_len=10)
    run(PROMPTS)
    assert calls == [10] * CFG.num_layers + [1] * CFG.num_layers  # prefill, then the step body
    run([[1, 2, 3], [4], [5, 6], [7, 8, 9, 10]], eos_id=3)
    run(PROMPTS[::-1], pad_id=7)
    assert len(calls) == 2 * CFG.num_layers  # other prompts, eos and pad ids: no new trace


def test_bad_requests_name_the_field_and_the_fix():
    model = _model()
    with pytest.raises(ValueError, match=r"prompt length 70 exceeds max_seq_len=64.*truncate"):
        generate_batch(model, [list(range(70))], 1)
    with pytest.raises(ValueError, match=r"max_seq_len=64.*lower max_new_tokens to 4"):
        generate_batch(model, [[1] * 60, [2]], 10)
    with pytest.raises(ValueError, match="prompt_len=5 is shorter than prompt 0"):
        generate_batch(model, PROMPTS, 2, prompt_len=5)
    with pytest.raises(ValueError, match="prompt 1 is empty"):
        generate_batch(model, [[1], []], 2)
    with pytest.raises(ValueError, match="max_new_tokens=0"):
        generate_batch(model, PROMPTS, 0)
    with pytest.raises(ValueError, match="top_p must lie in"):
        Sampler(1.0, top_p=0.0)
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        Sampler(-1.0)


def test_fp4_attention_models_generate_with_dot_product_attention():
    """With a cache the decoder always uses dot-product attention, padding included; the FP4
    cache-free forward takes no padding mask and says so."""
    fp4 = Llama(dataclasses.replace(CFG, attention="fp4_ptq"), rngs=nnx.Rngs(0))
    out = generate_batch(fp4, PROMPTS, NEW)
    np.testing.assert_array_equal(out.tokens, generate_batch(_model(), PROMPTS, NEW).tokens)
    tokens, pads = left_pad(PROMPTS, 0)
    with pytest.raises(ValueError, match="attention='fp4_ptq' takes no padding mask"):
        fp4(jnp.asarray(tokens), key_valid=jnp.ones(tokens.shape, bool))


# ---- the filters against float64 NumPy references ----


def _np_top_k(logits: np.ndarray, k: int) -> np.ndarray:
    """Keep the logits >= the k-th largest of each row."""
    out = np.array(logits, np.float64)
    for row in out.reshape(-1, out.shape[-1]):
        row[row < np.sort(row)[::-1][k - 1]] = -np.inf
    return out


def _np_top_p(logits: np.ndarray, p: float) -> np.ndarray:
    """Add tokens by falling probability until the mass reaches p; keep every token whose
    probability is at least the last one added (its ties)."""
    out = np.array(logits, np.float64)
    if p >= 1:
        return out
    for row in out.reshape(-1, out.shape[-1]):
        probs = np.exp(_log_softmax64(row))
        mass = 0.0
        for cutoff in sorted(probs, reverse=True):
            mass += cutoff
            if mass >= p:
                break
        row[probs < cutoff] = -np.inf
    return out


def _boundary_gap(logits: np.ndarray, p: float) -> float:
    """Distance from p to the nearest cumulative mass: float32 rounding decides nothing."""
    probs = np.exp(_log_softmax64(logits))
    return float(np.abs(np.cumsum(-np.sort(-probs, -1), -1) - p).min())


TOP_P_CASES = {  # name: (logits [..., V], p)
    "random rows, p=0.5": (np.random.default_rng(1).normal(0, 2, (3, 5, 40)), 0.5),
    "random rows, p=0.9": (np.random.default_rng(2).normal(0, 2, (6, 40)), 0.9),
    "ties at the cutoff": (np.log([[0.4, 0.2, 0.2, 0.2]]), 0.5),  # one tie needed, all kept
    "ties straddle p": (np.array([[2.0, 1.0, 1.0, 1.0, -1.0]]), 0.7),
    "p = 1 keeps all, even underflowing": (np.array([[0.0, -3.0, -200.0, -1e4]]), 1.0),
    "a single dominant token": (np.array([[30.0, 0.0, 0.1, -2.0, 0.0]]), 0.95),
    "all tied: everything kept": (np.zeros((2, 7)), 0.3),
    "-inf from top-k stays out": (np.array([[1.0, -np.inf, 0.5, -np.inf, 0.2]]), 0.99),
}


@pytest.mark.parametrize("name", list(TOP_P_CASES))
def test_top_p_filter_matches_the_numpy_reference(name):
    logits, p = TOP_P_CASES[name]
    if p < 1:
        assert _boundary_gap(logits, p) > 1e-5, "p lies on a cumulative mass: pick another"
    got = np.asarray(top_p_filter(jnp.asarray(logits, jnp.float32), p))
    want = _np_top_p(logits, p)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    kept = np.isfinite(want)
    np.testing.assert_array_equal(got[kept], np.float32(logits[kept]))
    if name == "ties at the cutoff":
        assert kept.tolist() == [[True, True, True, True]]
    if name == "a single dominant token":
        assert kept.sum() == 1


@pytest.mark.parametrize("k", [1, 3, 5, 9])
def test_top_k_filter_matches_the_numpy_reference_and_keeps_ties(k):
    logits = np.array([[3.0, 1.0, 1.0, 1.0, 0.5, -2.0, 2.0, 0.0, 1.0]])  # 4-way tie at 1.0
    got = np.isfinite(np.asarray(top_k_filter(jnp.asarray(logits, jnp.float32), k)))
    np.testing.assert_array_equal(got, np.isfinite(_np_top_k(logits, k)))
    assert got.sum() == {1: 1, 3: 6, 5: 6, 9: 9}[k]


def test_next_token_log_probs_of_padded_prompts_equal_each_unpadded_forward():
    model = _model()
    got = next_token_log_probs(model, PROMPTS, pad_id=0, prompt_len=8)
    assert got.shape == (len(PROMPTS), CFG.vocab_size)
    for row, prompt in zip(got, PROMPTS):
        np.testing.assert_allclose(row, _log_softmax64(_full_forward(model)(prompt)[-1]), atol=1e-4)
