"""Batched generation from a `Llama` with the KV cache, for prompts of different lengths.

Prompts are left-padded to one length T, so every row's last prompt token sits in slot T-1 and
all rows advance through the cache together. Row r has pads[r] leading pad slots: its RoPE
positions start at 0 at its first real token, and a key mask hides its pad slots from every
query, in the prefill and in every step. A row is then computed as if it had no padding (up to
float32 summation order; `tests/test_generation.py` checks it against uncached decoding).

The prefill and the whole decoding loop (`lax.while_loop`, which stops once every row is done)
are one jitted function of the split model state: it compiles once per batch size, padded prompt
length, `max_new_tokens`, `Sampler` and `num_samples` (eos and pad ids are traced), and never
per step. Step i draws with `fold_in(key, i)`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from shared.models.llama import KVCache, Llama
from shared.models.token_sampler import GREEDY, Sampler, choose_tokens


@dataclasses.dataclass(frozen=True)
class Generation:
    """What `generate_batch` returns (host arrays; B = prompts x num_samples)."""

    tokens: np.ndarray  # [B, max_new_tokens] int32: new tokens, pad_id after a row's end
    lengths: np.ndarray  # [B] int32: tokens each row generated, its eos included
    # [B, max_new_tokens] float32: log-softmax of the model's raw logits (temperature 1, no
    # top-k/top-p) at each chosen token, i.e. log pi(token | prefix) for policy gradients;
    # 0 after a row's end
    logprobs: np.ndarray


def left_pad(
    prompts: list[list[int]], pad_id: int, length: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Token-id lists -> (tokens [B, T] int32 right-aligned, pads [B] int32 leading pads).

    T is `length` if given (fixed shapes compile once), else the longest prompt."""
    sizes = [len(p) for p in prompts]
    if not prompts:
        raise ValueError("prompts is empty: pass at least one token-id list")
    if min(sizes) == 0:
        raise ValueError(
            f"prompt {sizes.index(0)} is empty: every prompt needs at least one token (e.g. BOS)"
        )
    t = max(sizes) if length is None else length
    if t < max(sizes):
        raise ValueError(
            f"prompt_len={length} is shorter than prompt {int(np.argmax(sizes))} "
            f"({max(sizes)} tokens): raise prompt_len or truncate the prompt"
        )
    tokens = np.full((len(prompts), t), pad_id, np.int32)
    for row, prompt in enumerate(prompts):
        tokens[row, t - len(prompt) :] = prompt
    return tokens, t - np.asarray(sizes, np.int32)


def _check_context(max_seq_len: int, prompt_len: int, max_new_tokens: int) -> None:
    """Prompt and new tokens share the KV cache, bounded by LlamaConfig.max_seq_len."""
    if prompt_len > max_seq_len:
        raise ValueError(
            f"padded prompt length {prompt_len} exceeds max_seq_len={max_seq_len} "
            "(LlamaConfig.max_seq_len, the model's context): truncate the prompts"
        )
    if prompt_len + max_new_tokens > max_seq_len:
        raise ValueError(
            f"padded prompt length {prompt_len} + max_new_tokens={max_new_tokens} exceeds "
            f"max_seq_len={max_seq_len} (LlamaConfig.max_seq_len, the model's context): lower "
            f"max_new_tokens to {max_seq_len - prompt_len} or shorten the prompts"
        )


def generate_batch(
    model: Llama,
    prompts: list[list[int]],
    max_new_tokens: int,
    *,
    sampler: Sampler = GREEDY,
    key: jax.Array | None = None,
    eos_id: int | None = None,
    pad_id: int = 0,
    prompt_len: int | None = None,
    num_samples: int = 1,
) -> Generation:
    """Continue each prompt (a list of token ids) by up to `max_new_tokens` tokens.

    Rows are prompt-major: row p * num_samples + j is sample j of prompt p (its prompt is
    prefilled once). A row ends after it emits `eos_id` (kept, counted in its length) and emits
    `pad_id` from then on. `key` is required unless the sampler is greedy. `prompt_len` pads
    every batch to one length, so batches of varying prompts reuse one compiled loop.
    """
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be at least 1")
    if num_samples < 1:
        raise ValueError(f"num_samples={num_samples} must be at least 1")
    if not sampler.greedy and key is None:
        raise ValueError(f"sampling with temperature {sampler.temperature} needs a PRNG key")
    tokens, pads = left_pad(prompts, pad_id, prompt_len)
    _check_context(model.cfg.max_seq_len, tokens.shape[1], max_new_tokens)
    graphdef, state = nnx.split(model)
    out = _decode(
        graphdef,
        state,
        jnp.asarray(tokens),
        jnp.asarray(pads),
        None if sampler.greedy else key,
        jnp.int32(-1 if eos_id is None else eos_id),  # no token id is -1: no row ends early
        jnp.int32(pad_id),
        max_new=max_new_tokens,
        sampler=sampler,
        num_samples=num_samples,
    )
    new, lengths, logprobs = jax.device_get(out)
    return Generation(new, lengths, logprobs)


def prefill(
    model: Llama, tokens: jax.Array, pads: jax.Array, capacity: int
) -> tuple[jax.Array, KVCache, jax.Array]:
    """Run left-padded prompts tokens [B, T] (pads [B] leading pads) into a fresh cache of
    `capacity` slots. Returns the last slot's logits [B, V], the cache and key_valid [B, S]
    (False at pad slots), which every later `extend` takes."""
    t = tokens.shape[1]
    cache = KVCache.empty(model.cfg, tokens.shape[0], capacity)
    key_valid = jnp.arange(capacity)[None, :] >= pads[:, None]
    # Pad slots are masked, but an out-of-vocabulary pad id would embed as NaN, and 0 * NaN in
    # the attention would reach the real tokens: feed token 0 there instead.
    tokens = jnp.where(key_valid[:, :t], tokens, 0)
    positions = jnp.maximum(jnp.arange(t)[None, :] - pads[:, None], 0)  # pad slots: any value
    logits, cache = model(tokens, cache=cache, positions=positions, key_valid=key_valid)
    return logits[:, -1], cache, key_valid


def extend(
    model: Llama, cache: KVCache, token: jax.Array, pads: jax.Array, key_valid: jax.Array
) -> tuple[jax.Array, KVCache]:
    """Feed one token per row, token [B], into slot cache.length -> (logits [B, V], cache)."""
    positions = (cache.length - pads)[:, None]  # [B, 1]: the slot less the row's pads
    logits, cache = model(token[:, None], cache=cache, positions=positions, key_valid=key_valid)
    return logits[:, -1], cache


def _repeat_rows(n: int, cache: KVCache, *rows: jax.Array):
    """Each row n times in a row: one prefill per prompt serves its n samples."""
    k, v = jnp.repeat(cache.k, n, 1), jnp.repeat(cache.v, n, 1)  # [layers, B, ...]
    return KVCache(k, v, cache.length), *(jnp.repeat(r, n, 0) for r in rows)


@functools.partial(jax.jit, static_argnames=("graphdef", "max_new", "sampler", "num_samples"))
def _decode(graphdef, state, tokens, pads, key, eos_id, pad_id, *, max_new, sampler, num_samples):
    """tokens [P, T], pads [P] -> new tokens [B, max_new], lengths [B], logprobs [B, max_new]."""
    model = nnx.merge(graphdef, state)
    # The last new token is never fed back, so the cache needs T + max_new - 1 slots.
    logits, cache, key_valid = prefill(model, tokens, pads, tokens.shape[1] + max_new - 1)
    if num_samples > 1:
        cache, logits, pads, key_valid = _repeat_rows(num_samples, cache, logits, pads, key_valid)
    b = pads.shape[0]

    def record(i, logits, carry):
        """Choose step i's tokens from logits [B, V] and write them into the outputs."""
        out, logprobs, done, lengths, _ = carry
        step_key = None if key is None else jax.random.fold_in(key, i)
        chosen = choose_tokens(logits, sampler, step_key)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), chosen[:, None], -1)
        token = jnp.where(done, pad_id, chosen)
        out = out.at[:, i].set(token)
        logprobs = logprobs.at[:, i].set(jnp.where(done, 0.0, logp[:, 0]))
        lengths = lengths + (~done).astype(jnp.int32)
        done = done | (token == eos_id)
        # Ended rows feed their (ignored) choice, not pad_id, which may lie outside the vocab.
        return out, logprobs, done, lengths, chosen

    def unfinished(loop):
        i, _, carry = loop
        return (i < max_new) & ~jnp.all(carry[2])

    def step(loop):
        i, cache, carry = loop
        logits, cache = extend(model, cache, carry[4], pads, key_valid)  # step i-1's tokens
        return i + 1, cache, record(i, logits, carry)

    carry = (
        jnp.full((b, max_new), pad_id, jnp.int32),  # new tokens
        jnp.zeros((b, max_new), jnp.float32),  # their log-probs
        jnp.zeros((b,), bool),  # row ended
        jnp.zeros((b,), jnp.int32),  # row length
        jnp.zeros((b,), jnp.int32),  # the tokens just chosen, fed at the next step
    )
    carry = record(0, logits, carry)
    _, _, (out, logprobs, _, lengths, _) = jax.lax.while_loop(
        unfinished, step, (jnp.ones((), jnp.int32), cache, carry)
    )
    return out, lengths, logprobs


@functools.partial(jax.jit, static_argnums=0)
def _last_log_probs(graphdef, state, tokens, pads):
    logits, _, _ = prefill(nnx.merge(graphdef, state), tokens, pads, tokens.shape[1])
    return jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)


def next_token_log_probs(
    model: Llama, prompts: list[list[int]], pad_id: int, prompt_len: int | None = None
) -> np.ndarray:
    """log p(next token | prompt) for each prompt -> [B, V] float32 (log-softmax of the raw
    logits). One prefill of the left-padded batch, no decoding: what a log-likelihood
    multiple-choice score needs when every choice is one token."""
    tokens, pads = left_pad(prompts, pad_id, prompt_len)
    _check_context(model.cfg.max_seq_len, tokens.shape[1], 0)
    graphdef, state = nnx.split(model)
    return np.asarray(_last_log_probs(graphdef, state, jnp.asarray(tokens), jnp.asarray(pads)))
