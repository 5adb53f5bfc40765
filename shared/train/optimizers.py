"""Optimizers and schedules used across projects."""

from __future__ import annotations

import jax
import optax


def warmup_cosine(
    lr: float, total_steps: int, warmup_steps: int = 0, end_ratio: float = 0.0
) -> optax.Schedule:
    """Linear warm-up from 0 to `lr`, then cosine decay to `end_ratio * lr` at `total_steps`
    (optax's decay_steps includes the warm-up); `end_ratio=1.0` holds `lr` after the warm-up.

    The value at step t < warmup_steps is lr * t / warmup_steps (0 at step 0), `lr` at step
    `warmup_steps`. A warm-up as long as the run is cut to `total_steps - 1` steps, so that the
    last step runs at the peak and the cosine segment is never empty."""
    warmup_steps = min(warmup_steps, max(total_steps - 1, 0))
    return optax.warmup_cosine_decay_schedule(
        0.0, lr, warmup_steps, max(total_steps, 1), end_ratio * lr
    )


def adamw_no_decay_on_vectors(
    learning_rate: float | optax.Schedule,
    weight_decay: float,
    b1: float = 0.9,
    b2: float = 0.999,
    *,
    grad_clip: float = 0.0,
) -> optax.GradientTransformation:
    """AdamW whose weight decay skips biases and other 1-D tensors (as T-JEPA and most LMs do).

    `grad_clip > 0` first clips the gradients to that global norm (0: no clipping, and the
    optimizer state is AdamW's alone)."""
    if grad_clip < 0:
        raise ValueError(f"grad_clip={grad_clip}: use 0 for no clipping or a positive norm")
    mask = lambda params: jax.tree.map(lambda p: p.ndim > 1, params)
    adamw = optax.adamw(learning_rate, b1=b1, b2=b2, weight_decay=weight_decay, mask=mask)
    return optax.chain(optax.clip_by_global_norm(grad_clip), adamw) if grad_clip else adamw
