"""PASO: step-parallel solve of an optax trajectory by the official code's sliding-window iteration.

The T-step trajectory θ_{t+1}, s_{t+1} = OptStep(θ_t, s_t, g(θ_t; t)) is a triangular system whose
unique solution is the sequential run. Each outer iteration:

1. evaluates the gradients of the window's P guessed iterates θ̂[b .. b+P-1] at once (`vmap` on one
   device, `shard_map` over a mesh axis when a mesh is given), step t keyed by its index;
2. rolls the real optax optimizer sequentially from the exact anchor (θ_b, s_b) through them and
   measures err_i = 1e6 · ||θ'_{b+i+1} − θ̂[b+i+1]||² / n_params;
3. accepts up to and including the first step whose error exceeds the tolerance (the window's
   last valid step is always accepted), so the anchor advances by k >= 1 and K <= T;
4. slides: the new guesses are the rollout's iterates from the new anchor on, padded with the last
   rollout iterate; the optimizer state of the new anchor is the rollout state after k steps;
5. adapts the tolerance: τ <- decay·τ + (1 − decay)·agg(errs).

`grad_fn(params, t, data) -> grads` must be a pure function of the step index t (minibatch and
every random draw from t), so that the fixed point is exactly the sequential trajectory.
Everything is one `lax.while_loop` over fixed-size buffers: [P+1] guesses, one optimizer state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

PyTree = Any
GradFn = Callable[[PyTree, jax.Array, PyTree], PyTree]  # (params, step, data) -> grads


@dataclasses.dataclass(frozen=True)
class PasoConfig:
    window: int = 8  # P: guessed iterates whose gradients are evaluated in parallel
    tol: float = 1e-5  # initial τ on the error scale 1e6 · mean squared difference
    ema_decay: float = 0.999  # τ <- decay·τ + (1 − decay)·agg(errs); 1.0 keeps τ fixed
    # "mean": mean of the window's errors; "middle": errs[L // 2], the official code's 'median'
    # (the middle element in step order, not a sorted median)
    agg: Literal["mean", "middle"] = "mean"

    def __post_init__(self):
        if self.window < 1:
            raise ValueError(f"window={self.window} must be >= 1")
        if self.tol < 0:
            raise ValueError(f"tol={self.tol} must be >= 0")
        if not 0.0 <= self.ema_decay <= 1.0:
            raise ValueError(f"ema_decay={self.ema_decay} must lie in [0, 1]")
        if self.agg not in ("mean", "middle"):
            raise ValueError(f"agg={self.agg!r} must be 'mean' or 'middle'")


class PasoResult(NamedTuple):
    params: PyTree  # θ_T
    opt_state: PyTree  # s_T (Adam moments and count included)
    iterations: jax.Array  # K: outer (sequential) iterations
    grad_evals: jax.Array  # gradient evaluations actually needed (Σ of window lengths)
    anchors: jax.Array  # [T + 1] int32: accepted steps after k iterations (-1 after K)
    tol: jax.Array  # final τ
    checkpoints: PyTree  # [C, ...] accepted iterates at `checkpoint_steps`


def sq_distance(a: PyTree, b: PyTree) -> jax.Array:
    """Σ over all parameters of (a − b)², in float32."""
    parts = jax.tree.map(lambda x, y: jnp.sum(jnp.square((x - y).astype(jnp.float32))), a, b)
    return sum(jax.tree.leaves(parts), jnp.zeros((), jnp.float32))


def num_params(tree: PyTree) -> int:
    return int(sum(np.prod(x.shape) for x in jax.tree.leaves(tree)))


def _take(tree: PyTree, idx: jax.Array) -> PyTree:
    return jax.tree.map(lambda x: jnp.take(x, idx, axis=0), tree)


def _select(pred: jax.Array, a: PyTree, b: PyTree) -> PyTree:
    return jax.tree.map(lambda x, y: jnp.where(pred, x, y), a, b)


def _window_grads(
    grad_fn: GradFn, guesses: PyTree, steps: jax.Array, data: PyTree, mesh, axis: str
) -> PyTree:
    """Gradients of P guesses [P, ...] at steps [P]: one vmap, or a shard_map of vmaps that gives
    each device P / n_devices consecutive window slots (data replicated)."""
    batched = jax.vmap(grad_fn, in_axes=(0, 0, None))
    if mesh is None:
        return batched(guesses, steps, data)
    spec = jax.sharding.PartitionSpec(axis)
    rep = jax.sharding.PartitionSpec()
    return jax.shard_map(
        batched, mesh=mesh, in_specs=(spec, spec, rep), out_specs=spec, check_vma=False
    )(guesses, steps, data)


def _step_opt(tx: optax.GradientTransformation, theta, state, grads):
    updates, state = tx.update(grads, state, theta)
    return optax.apply_updates(theta, updates), state


def paso(
    tx: optax.GradientTransformation,
    grad_fn: GradFn,
    params: PyTree,
    data: PyTree,
    num_steps: int,
    cfg: PasoConfig,
    *,
    mesh: jax.sharding.Mesh | None = None,
    axis: str = "window",
    checkpoint_steps: Sequence[int] = (),
) -> PasoResult:
    """Solves the `num_steps`-step trajectory of `tx` from `params`; jit-able (static: tx,
    grad_fn, num_steps, cfg, mesh, axis, checkpoint_steps)."""
    T, P = int(num_steps), cfg.window
    if T < 1:
        raise ValueError(f"num_steps={T} must be >= 1")
    if mesh is not None and P % mesh.shape[axis]:
        raise ValueError(
            f"window={P} must be a multiple of the mesh axis '{axis}' size {mesh.shape[axis]}"
        )
    ckpt = np.asarray(sorted(set(checkpoint_steps)), np.int32)
    if len(ckpt) and (ckpt.min() < 0 or ckpt.max() > T):
        raise ValueError(f"checkpoint_steps must lie in [0, {T}], got {ckpt.tolist()}")
    n = num_params(params)
    arange = jnp.arange(P, dtype=jnp.int32)
    stack = lambda x, m: jnp.broadcast_to(x, (m, *x.shape))  # noqa: E731

    def body(c):
        b, guesses, state, tol, k, evals, anchors, cks = c
        length = jnp.minimum(P, T - b)  # L: window slots that are real steps (< T)
        window = jax.tree.map(lambda x: x[:P], guesses)
        grads = _window_grads(grad_fn, window, b + arange, data, mesh, axis)

        def roll(carry, xs):
            theta, s, found, cap_state, acc = carry
            g, guess, i = xs
            theta, s = _step_opt(tx, theta, s, g)
            err = 1e6 * sq_distance(theta, guess) / n
            stop = ~found & (i < length) & ((err > tol) | (i == length - 1))
            cap_state = _select(stop, s, cap_state)
            acc = jnp.where(stop, i + 1, acc)
            return (theta, s, found | stop, cap_state, acc), (theta, err)

        anchor = jax.tree.map(lambda x: x[0], guesses)
        later = jax.tree.map(lambda x: x[1:], guesses)
        init = (anchor, state, jnp.bool_(False), state, jnp.int32(0))
        (_, _, _, new_state, acc), (rolled, errs) = jax.lax.scan(roll, init, (grads, later, arange))
        full = jax.tree.map(lambda a, r: jnp.concatenate([a[None], r]), anchor, rolled)
        # Slide: guess j of the new window is rollout iterate acc + j, the last one repeated.
        new_guesses = _take(full, jnp.minimum(acc + jnp.arange(P + 1), length))
        valid = arange < length
        if cfg.agg == "mean":
            agg = jnp.sum(jnp.where(valid, errs, 0.0)) / length
        else:
            agg = errs[length // 2]
        tol = cfg.ema_decay * tol + (1.0 - cfg.ema_decay) * agg
        if len(ckpt):  # record accepted iterates b+1 .. b+acc that are checkpoints
            rel = jnp.asarray(ckpt) - b
            hit = (rel >= 1) & (rel <= acc)
            picked = _take(full, jnp.clip(rel, 0, P))
            cks = jax.tree.map(
                lambda new, old: jnp.where(hit.reshape((-1,) + (1,) * (old.ndim - 1)), new, old),
                picked,
                cks,
            )
        anchors = anchors.at[k + 1].set(b + acc)
        return b + acc, new_guesses, new_state, tol, k + 1, evals + length, anchors, cks

    state0 = tx.init(params)
    cks0 = jax.tree.map(lambda x: stack(x, len(ckpt)), params)
    anchors0 = jnp.full((T + 1,), -1, jnp.int32).at[0].set(0)
    carry = (
        jnp.int32(0),
        jax.tree.map(lambda x: stack(x, P + 1), params),
        state0,
        jnp.float32(cfg.tol),
        jnp.int32(0),
        jnp.int32(0),
        anchors0,
        cks0,
    )
    b, guesses, state, tol, k, evals, anchors, cks = jax.lax.while_loop(
        lambda c: c[0] < T, body, carry
    )
    final = jax.tree.map(lambda x: x[0], guesses)
    return PasoResult(final, state, k, evals, anchors, tol, cks)


def sequential(
    tx: optax.GradientTransformation,
    grad_fn: GradFn,
    params: PyTree,
    data: PyTree,
    num_steps: int,
    *,
    checkpoint_steps: Sequence[int] = (),
) -> tuple[PyTree, PyTree, PyTree]:
    """The plain trajectory (one gradient per step): (θ_T, s_T, iterates at checkpoint_steps).

    The gradient is the same vmapped function PASO uses (a window of one), so that the two runs
    share the arithmetic of the gradient up to the batch size of the vmap."""
    ckpt = np.asarray(sorted(set(checkpoint_steps)), np.int32)
    single = jax.vmap(grad_fn, in_axes=(0, 0, None))
    slot = np.full((num_steps + 1,), -1, np.int32)  # checkpoint slot of each step, -1 if none
    slot[ckpt] = np.arange(len(ckpt))

    def record(cks, theta, t):
        if not len(ckpt):
            return cks
        write = lambda c: jax.tree.map(lambda b, x: b.at[slot[t]].set(x), c, theta)  # noqa: E731
        return jax.lax.cond(slot[t] >= 0, write, lambda c: c, cks)

    def step(carry, t):
        theta, s, cks = carry
        g = single(jax.tree.map(lambda x: x[None], theta), t[None], data)
        theta, s = _step_opt(tx, theta, s, jax.tree.map(lambda x: x[0], g))
        return (theta, s, record(cks, theta, t + 1)), None

    slot = jnp.asarray(slot)
    cks = jax.tree.map(lambda x: jnp.zeros((len(ckpt), *x.shape), x.dtype), params)
    cks = record(cks, params, 0)
    carry = (params, tx.init(params), cks)
    (theta, s, cks), _ = jax.lax.scan(step, carry, jnp.arange(num_steps, dtype=jnp.int32))
    return theta, s, cks
