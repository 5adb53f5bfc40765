"""M-IDoL's objectives (spec sec. 2; all Reconstruction: the paper names only the two goals).

- `route_loss`: L_route = -H(E_batch[r]) + E_batch[H(r)] = -I(expert; x), for router
  probabilities r: [b, E]. Its minimum -log E is confident (one-hot) routing with balanced
  experts; uniform per-sample routing gives 0. The batch-marginal term is what stops every sample
  going to one expert (per-sample entropy alone is minimized by that collapse).
- `separation_loss`: L_sep = sum_{e != e'} ||P_e^T P_e'||_F^2 over the orthonormalized first-layer
  weights P_e: [D, r] of the experts (the subspace of z each expert reads): 0 for orthogonal
  subspaces, r per ordered pair for identical ones.
- `dino_loss`: DINO's cross-entropy between a centred, sharpened teacher (stop-gradient) and the
  student, over every (teacher global view, student view) pair of different views.
- `update_centres`: per-expert EMA of the teacher logits routed to that expert.
- `ema_momentum` / `ema_update`: the teacher as EMA of the student, momentum 0.996 -> 1 (cosine).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def entropy(p: jax.Array, axis: int = -1) -> jax.Array:
    """Shannon entropy (nats) of probabilities p along `axis`; 0 log 0 = 0."""
    return -jnp.sum(jnp.where(p > 0, p * jnp.log(jnp.where(p > 0, p, 1.0)), 0.0), axis=axis)


def route_loss(r: jax.Array) -> jax.Array:
    """r: [b, E] router probabilities (rows sum to 1) -> scalar -H(mean_b r) + mean_b H(r)."""
    return -entropy(r.mean(0)) + entropy(r).mean()


def orthonormal_basis(w: jax.Array) -> jax.Array:
    """w: [..., D, r] (r <= D, full column rank) -> an orthonormal basis [..., D, r] of its
    column span (reduced QR; the span, and so L_sep, does not depend on QR's sign choices)."""
    return jnp.linalg.qr(w, mode="reduced")[0]


def separation_loss(w: jax.Array) -> jax.Array:
    """w: [E, D, r] first-layer weights of E experts -> sum over ordered pairs e != e' of
    ||P_e^T P_e'||_F^2 (squared cosines of the principal angles between the subspaces)."""
    p = orthonormal_basis(w)
    overlap = jnp.einsum("edr,fds->efrs", p, p)  # [E, E, r, r]
    sq = jnp.sum(overlap**2, axis=(2, 3))  # [E, E]
    off = ~jnp.eye(w.shape[0], dtype=bool)  # masked, not total - trace: that cancels E * r
    return jnp.sum(jnp.where(off, sq, 0.0))


def teacher_probs(logits: jax.Array, centre: jax.Array, temperature: float) -> jax.Array:
    """logits [..., K], centre broadcastable -> softmax((logits - centre) / T), no gradient."""
    return jax.nn.softmax(jax.lax.stop_gradient(logits - centre) / temperature, axis=-1)


def dino_loss(
    student: jax.Array,
    teacher: jax.Array,
    centre: jax.Array,
    student_temp: float = 0.1,
    teacher_temp: float = 0.04,
) -> jax.Array:
    """student: [V, b, K] logits of V views (the first G are the global ones), teacher: [G, b, K]
    logits of the G global views, centre: [b, K] (each sample's routed expert's centre) ->
    mean over the G * V - G pairs (g, v != g) and the batch of -sum_k t_k log s_k.

    The teacher side is under stop_gradient: no gradient reaches the teacher.
    """
    g, v = teacher.shape[0], student.shape[0]
    t = teacher_probs(teacher, centre, teacher_temp)  # [G, b, K]
    log_s = jax.nn.log_softmax(student / student_temp, axis=-1)  # [V, b, K]
    ce = -jnp.einsum("gbk,vbk->gvb", t, log_s)  # [G, V, b]
    mask = 1.0 - jnp.eye(g, v)  # teacher view g is never compared with the same student view
    return jnp.sum(ce.mean(-1) * mask) / jnp.sum(mask)


def update_centres(
    centres: jax.Array, teacher: jax.Array, expert: jax.Array, momentum: float = 0.9
) -> jax.Array:
    """centres: [E, K]; teacher: [G, b, K] logits; expert: [b] routed expert of each sample.

    c_e <- m c_e + (1 - m) * mean of the teacher logits (over the G views) of the samples routed
    to e; an expert that got no sample this batch keeps its centre.
    """
    num = centres.shape[0]
    onehot = jax.nn.one_hot(expert, num, dtype=teacher.dtype)  # [b, E]
    sums = jnp.einsum("be,gbk->ek", onehot, jax.lax.stop_gradient(teacher))
    counts = onehot.sum(0) * teacher.shape[0]  # [E] logits summed per expert
    mean = sums / jnp.maximum(counts, 1.0)[:, None]
    new = momentum * centres + (1 - momentum) * mean
    return jnp.where(counts[:, None] > 0, new, centres)


def ema_momentum(
    step: jax.Array | int, total_steps: int, base: float = 0.996, final: float = 1.0
) -> jax.Array:
    """DINO's cosine schedule: base at step 0, final at step total_steps.

    m(t) = final - (final - base) * (cos(pi t / T) + 1) / 2.
    """
    frac = jnp.asarray(step, jnp.float32) / max(total_steps, 1)
    return final - (final - base) * (jnp.cos(jnp.pi * frac) + 1) / 2


def ema_update(teacher, student, momentum: jax.Array | float):
    """teacher <- m * teacher + (1 - m) * student, leaf by leaf (any matching pytrees)."""
    return jax.tree.map(lambda t, s: momentum * t + (1 - momentum) * s, teacher, student)
