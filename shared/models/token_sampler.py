"""How the next token is picked from a row of logits: greedy, or temperature with top-k / top-p.

The order is HF transformers' (its logits warpers): logits / temperature, then top-k, then top-p
(nucleus) on the result, then one categorical draw. Both filters keep every token tied with the
last token they keep, so what they keep never depends on how a sort orders equal values.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Sampler:
    """A decoding rule; frozen and hashable, so a jitted loop takes it as a static argument."""

    temperature: float = 0.0  # 0: greedy (argmax, top_p/top_k unused); > 0: sample
    top_p: float = 1.0  # nucleus mass in (0, 1]; 1 keeps every token
    top_k: int = 0  # keep the k largest logits; 0 keeps every token

    def __post_init__(self):
        if not self.temperature >= 0:  # also rejects NaN
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {self.top_p}; 1 turns it off")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}; 0 turns it off")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


GREEDY = Sampler()  # argmax decoding


def top_k_filter(logits: jax.Array, k: int) -> jax.Array:
    """logits [..., V] -> the same with every logit below the k-th largest set to -inf.

    Logits tied with the k-th largest are kept too; k = 0 or k >= V keeps everything."""
    if k == 0 or k >= logits.shape[-1]:
        return logits
    kth = jax.lax.top_k(logits, k)[0][..., -1:]
    return jnp.where(logits >= kth, logits, -jnp.inf)


def top_p_filter(logits: jax.Array, p: float | jax.Array) -> jax.Array:
    """logits [..., V] -> the same with every token outside the nucleus set to -inf.

    The nucleus is the smallest set of most probable tokens (probabilities softmax(logits))
    whose mass reaches p, widened by every token tied with its least probable member. The most
    probable token is always kept; p >= 1 keeps every token, zero-probability ones included."""
    probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
    desc = jnp.sort(probs, axis=-1, descending=True)
    cum = jnp.cumsum(desc, axis=-1)
    mass_before = jnp.concatenate([jnp.zeros_like(cum[..., :1]), cum[..., :-1]], axis=-1)
    in_nucleus = mass_before < p  # token i joins while the mass before it falls short of p
    cutoff = jnp.min(jnp.where(in_nucleus, desc, jnp.inf), axis=-1, keepdims=True)
    keep = (probs >= cutoff) | (p >= 1)
    return jnp.where(keep, logits, -jnp.inf)


def choose_tokens(logits: jax.Array, sampler: Sampler, key: jax.Array | None) -> jax.Array:
    """logits [B, V] -> token ids [B] int32 by `sampler`; `key` is unused when greedy."""
    if sampler.greedy:
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)
    scaled = top_k_filter(logits / sampler.temperature, sampler.top_k)
    if sampler.top_p < 1:
        scaled = top_p_filter(scaled, sampler.top_p)
    return jax.random.categorical(key, scaled, axis=-1).astype(jnp.int32)
