"""Held-out perplexity and next-token accuracy of a decoder under a given attention mode."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.attn_qat.model import with_attention
from shared.models.llama import Llama


@functools.partial(jax.jit, static_argnums=0)
def _sums(graphdef, state, windows, weight):
    """windows [B, L + 1], weight [B] (0 for padding) -> (sum of CE, sum of correct, tokens)."""
    logits = nnx.merge(graphdef, state)(windows[:, :-1])
    targets = windows[:, 1:]
    logp = jax.nn.log_softmax(logits, axis=-1)
    ce = -jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
    hit = (jnp.argmax(logits, axis=-1) == targets).astype(jnp.float32)
    w = weight[:, None] * jnp.ones_like(ce)
    return jnp.sum(ce * w), jnp.sum(hit * w), jnp.sum(w)


def evaluate(
    model: Llama, windows: np.ndarray, attention: str, batch_size: int, impl: str = "auto"
) -> dict[str, float]:
    """{"loss", "ppl", "acc"} over every next-token target of `windows` [n, L + 1], with the
    decoder's attention set to `attention` ("dot_product" or an FP4 mode)."""
    graphdef, state = nnx.split(with_attention(model, attention, impl))
    ce = hit = count = 0.0
    for i in range(0, len(windows), batch_size):
        chunk = windows[i : i + batch_size]
        n = len(chunk)
        # A short last batch is padded (weight 0) so one compiled shape serves every batch.
        padded = np.concatenate([chunk, np.repeat(chunk[:1], batch_size - n, 0)])
        weight = (np.arange(batch_size) < n).astype(np.float32)
        s = jax.device_get(_sums(graphdef, state, jnp.asarray(padded), jnp.asarray(weight)))
        ce, hit, count = ce + float(s[0]), hit + float(s[1]), count + float(s[2])
    loss = ce / count
    if not math.isfinite(loss):
        raise FloatingPointError(f"held-out loss is {loss} under attention={attention!r}")
    return {"loss": loss, "ppl": math.exp(loss), "acc": hit / count}
