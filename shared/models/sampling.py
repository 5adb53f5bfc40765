"""Greedy / temperature sampling from a `Llama` with a KV cache.

The prompt is run once (prefill), then one token per step; both steps are jitted pure functions
of the split model state, so the weights are an argument, not a baked-in constant.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from shared.models.llama import KVCache, Llama


@functools.partial(jax.jit, static_argnums=0)
def _advance(graphdef, state, tokens, cache):
    logits, cache = nnx.merge(graphdef, state)(tokens, cache=cache)
    return logits[:, -1], cache


def _pick(logits: jax.Array, temperature: float, key: jax.Array | None) -> jax.Array:
    if temperature == 0.0:
        return jnp.argmax(logits, axis=-1)
    return jax.random.categorical(key, logits / temperature, axis=-1)


def generate(
    model: Llama,
    prompt: np.ndarray | list[list[int]],
    max_new_tokens: int,
    *,
    temperature: float = 0.0,
    key: jax.Array | None = None,
    eos_id: int | None = None,
) -> np.ndarray:
    """prompt [B, T] (equal lengths) -> the new tokens [B, <= max_new_tokens].

    temperature 0 is greedy; otherwise `key` is required and step i samples with
    fold_in(key, i). Generation stops early once every row has produced `eos_id`; positions
    after a row's eos are filled with eos.
    """
    prompt = np.asarray(prompt, np.int32)
    if prompt.ndim != 2:
        raise ValueError(f"prompt must be [batch, length], got shape {prompt.shape}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be at least 1")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if temperature > 0 and key is None:
        raise ValueError("sampling with temperature > 0 needs a PRNG key")
    b, t = prompt.shape
    cache = KVCache.empty(model.cfg, b, t + max_new_tokens)
    graphdef, state = nnx.split(model)
    logits, cache = _advance(graphdef, state, jnp.asarray(prompt), cache)
    out, done = [], np.zeros(b, bool)
    for i in range(max_new_tokens):
        step_key = None if key is None else jax.random.fold_in(key, i)
        token = np.asarray(_pick(logits, temperature, step_key))
        if eos_id is not None:
            token = np.where(done, eos_id, token)
            done |= token == eos_id
        out.append(token)
        if done.all() or i == max_new_tokens - 1:
            break
        logits, cache = _advance(graphdef, state, jnp.asarray(token[:, None]), cache)
    return np.stack(out, axis=1)
