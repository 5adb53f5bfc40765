"""Attention replacement: learned attention probabilities swapped for predefined ones at
inference (no retraining), as `shared.interp` interventions.

Reconstruction (not confirmed by the paper, ../papers/lost_in_attention.md section 2): the
probability matrix A = softmax(QKᵀ/√d_h + M_causal) is replaced and W_V, W_O are kept.
  noise_all      A' = rownorm(causal ⊙ exp(ε)), ε ~ N(0, 1), every layer
  noise_late     the same in layers >= late_from only
  uniform        A'_ij = 1/(i+1) for j <= i (causal mean pooling), every layer
  text_to_image  only the entries (text query, image key) of every layer, replaced by noise
                 rescaled to the mass the model put on the image keys (the row's text part
                 and the image queries keep the learned attention)
The noise is drawn afresh for every forward pass: independently per sample, head and layer
(one draw = one key; the tables average 5 draws).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from shared.interp import AttentionOverride, Intervention, causal_noise_probs, causal_uniform_probs

MODES = ("vanilla", "noise_all", "noise_late", "uniform", "text_to_image")
STOCHASTIC = ("noise_all", "noise_late", "text_to_image")


def intervention(
    mode: str,
    key: jax.Array,
    *,
    batch: int,
    num_heads: int,
    num_layers: int,
    seq: int,
    n_image: int = 0,
    late_from: int = 0,
) -> Intervention | None:
    """The intervention of `mode` for a batch of `batch` sequences of `seq` tokens whose first
    `n_image` are image tokens."""
    if mode not in MODES:
        raise ValueError(f"replacement mode {mode!r} is unknown; choose from {MODES}")
    if mode == "vanilla":
        return None
    everywhere = jnp.ones((1, 1, seq, seq), bool)  # trace() intersects it with the causal mask
    shape = (batch, num_heads, seq, seq)
    if mode == "uniform":
        fixed = AttentionOverride(causal_uniform_probs(seq), everywhere)
        return Intervention(attention={i: fixed for i in range(num_layers)})
    if mode == "text_to_image":
        if not 0 < n_image < seq:
            raise ValueError(f"text_to_image needs image tokens: n_image={n_image}, seq={seq}")
        pos = jnp.arange(seq)
        where = ((pos[:, None] >= n_image) & (pos[None, :] < n_image))[None, None]
        return Intervention(
            attention={
                i: AttentionOverride(
                    causal_noise_probs(jax.random.fold_in(key, i), shape, where), where, True
                )
                for i in range(num_layers)
            }
        )
    layers = range(late_from if mode == "noise_late" else 0, num_layers)
    if not layers:
        raise ValueError(f"late_from={late_from} leaves no layer of {num_layers} to replace")
    return Intervention(
        attention={
            i: AttentionOverride(causal_noise_probs(jax.random.fold_in(key, i), shape), everywhere)
            for i in layers
        }
    )
