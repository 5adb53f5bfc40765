"""SCALE (Glentis et al., ICML 2026): column-normalized SGD with momentum on the last layer only.

Routing (official code, `mem_eff_pt/pt_scale/scale_optimizer.py`):
  main (attention / MLP / embedding matrices): U = G / max(rms(G over fan-in axes), eps), no state
  last (the untied lm_head): m <- beta m + (1 - beta) G (no bias correction), U = C(m)
  oned (RMSNorm gains): AdamW with eps added before the bias correction, at
                        adam_lr * schedule(t) / peak_lr
Matrices step by -schedule(t) * U with linear warm-up then cosine to 0.1x the peak.

The optax port (`optax.partition` over three groups) is a Reconstruction that mirrors the official
PyTorch code; the normalization itself runs through `kernels_pallas.column_norm`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from kernels_pallas.column_norm import column_norm_update
from shared.optim.labels import AxesFn, fan_in_axes, path_name, scale_labels
from shared.train.optimizers import warmup_cosine

NORMS = ("rms", "l2", "none")


def scale_schedule(
    peak: float, total_steps: int, warmup_steps: int | None = None, min_ratio: float = 0.1
) -> optax.Schedule:
    """Linear warm-up from 0 over `warmup_steps` (default 10%), then cosine to min_ratio * peak
    at `total_steps` (optax's decay_steps includes the warm-up)."""
    if total_steps < 1:
        raise ValueError(f"total_steps={total_steps} must be at least 1")
    warmup = int(0.1 * total_steps) if warmup_steps is None else warmup_steps
    return warmup_cosine(peak, total_steps, warmup, end_ratio=min_ratio)


class ColumnNormState(NamedTuple):
    momentum: Any  # EMA buffers (same tree as the params it is applied to) or () without momentum


def _leaf_norm(g, m, *, axes, beta, eps, norm, impl):
    """(-U, new m) for one leaf; U = X / max(rms(X over axes), eps) with X = G or the EMA."""
    if norm == "none":
        if m is None:
            return -g, None
        new_m = (beta * m.astype(jnp.float32) + (1 - beta) * g.astype(jnp.float32)).astype(m.dtype)
        return -new_m.astype(g.dtype), new_m
    # L2 = sqrt(n) * RMS: the kernel's clamp at eps / sqrt(n) then 1 / sqrt(n) is exactly
    # X / max(||X||, eps).
    n = math.prod(g.shape[a] for a in axes) if norm == "l2" else 1
    root = math.sqrt(n)
    u, new_m = column_norm_update(
        g, m, lr=1.0 / root, beta=beta, eps=eps / root, reduce_axes=axes, impl=impl
    )
    return u, new_m


def scale_by_column_norm(
    *,
    momentum: float | None = None,
    eps: float = 1e-8,
    reduce_axes: AxesFn = fan_in_axes,
    norm: str = "rms",
    impl: str = "auto",
) -> optax.GradientTransformation:
    """Column normalization (optionally after an EMA of the gradients), negated: the result is
    -U, ready for `optax.scale_by_schedule`. No state without momentum.

    `reduce_axes(name, leaf)` gives the axes each leaf's statistic is taken over (fan-in axes
    by default: one scale per output unit, as the official code)."""
    if norm not in NORMS:
        raise ValueError(f"norm={norm!r}; choose one of {NORMS}")

    def init_fn(params):
        if momentum is None:
            return ColumnNormState(())
        return ColumnNormState(jax.tree.map(jnp.zeros_like, params))

    def update_fn(updates, state, params=None):
        del params
        leaves, treedef = jax.tree_util.tree_flatten_with_path(updates)
        ms = [None] * len(leaves) if momentum is None else jax.tree.leaves(state.momentum)
        out_u, out_m = [], []
        for (path, g), m in zip(leaves, ms, strict=True):
            u, new_m = _leaf_norm(
                g,
                m,
                axes=tuple(reduce_axes(path_name(path), g)),
                beta=0.0 if momentum is None else momentum,
                eps=eps,
                norm=norm,
                impl=impl,
            )
            out_u.append(u)
            out_m.append(new_m)
        new_updates = jax.tree.unflatten(treedef, out_u)
        if momentum is None:
            return new_updates, state
        return new_updates, ColumnNormState(jax.tree.unflatten(treedef, out_m))

    return optax.GradientTransformation(init_fn, update_fn)


class AdamOfficialState(NamedTuple):
    count: jax.Array  # steps taken, int32
    mu: Any
    nu: Any


def scale_by_adam_eps_first(
    b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8
) -> optax.GradientTransformation:
    """The official 1-D update direction: (m / (eps + sqrt(v))) * sqrt(1 - b2^t) / (1 - b1^t).

    eps is added to the raw sqrt(v) before the bias correction (optax's scale_by_adam adds it
    after, to sqrt(v_hat)); the two differ while v is small."""

    def init_fn(params):
        mu = jax.tree.map(jnp.zeros_like, params)
        nu = jax.tree.map(jnp.zeros_like, params)  # separate buffers (donation-safe)
        return AdamOfficialState(jnp.zeros([], jnp.int32), mu, nu)

    def update_fn(updates, state, params=None):
        del params
        count = optax.safe_int32_increment(state.count)
        mu = jax.tree.map(lambda m, g: m + (1 - b1) * (g - m), state.mu, updates)
        nu = jax.tree.map(lambda v, g: v + (1 - b2) * (g * g - v), state.nu, updates)
        t = count.astype(jnp.float32)
        corr = jnp.sqrt(1 - b2**t) / (1 - b1**t)
        out = jax.tree.map(lambda m, v: (m / (eps + jnp.sqrt(v)) * corr).astype(m.dtype), mu, nu)
        return out, AdamOfficialState(count, mu, nu)

    return optax.GradientTransformation(init_fn, update_fn)


def scale(
    learning_rate: float = 1e-3,
    total_steps: int = 20_000,
    *,
    warmup_steps: int | None = None,
    min_lr_ratio: float = 0.1,
    adam_lr: float = 0.02,
    beta: float = 0.9,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    head_momentum: bool = True,
    main_momentum: bool = False,
    norm: str = "rms",
    labels: Callable[[Any], Any] = scale_labels,
    reduce_axes: AxesFn = fan_in_axes,
    impl: str = "auto",
) -> optax.GradientTransformation:
    """The SCALE optimizer (defaults = the official 60M/130M/350M settings).

    Ablations: head_momentum=False gives column-normalized SGD; main_momentum=True puts the EMA on
    every matrix; norm="l2" divides by the column L2 norm, norm="none" skips the normalization;
    reduce_axes=labels.fan_out_axes normalizes per input unit. `labels(params)` must return
    'main' / 'last' / 'oned' per leaf (see shared.optim.labels for any model)."""
    if learning_rate <= 0 or adam_lr < 0:
        raise ValueError(f"learning_rate={learning_rate} and adam_lr={adam_lr} must be positive")
    sched = scale_schedule(learning_rate, total_steps, warmup_steps, min_lr_ratio)

    def matrices(mom: bool) -> optax.GradientTransformation:
        return optax.chain(
            scale_by_column_norm(
                momentum=beta if mom else None,
                eps=eps,
                reduce_axes=reduce_axes,
                norm=norm,
                impl=impl,
            ),
            optax.scale_by_schedule(sched),  # the transform already negated U
        )

    oned = optax.chain(
        scale_by_adam_eps_first(b1, b2, eps),
        # the 1-D LR follows the main schedule's shape: adam_lr * lr(t) / peak
        optax.scale_by_learning_rate(lambda t: adam_lr * sched(t) / learning_rate),
    )
    return optax.partition(
        {"main": matrices(main_momentum), "last": matrices(head_momentum), "oned": oned}, labels
    )
