"""HypCL's task adapters on frozen CLIP features, in the Poincaré ball or (as the baseline and the
c -> 0 limit) in Euclidean space.

Reconstruction (not confirmed by the paper), after the spec:
    u = exp_0(alpha * f)                        f: frozen, L2-normalized image feature
    T_s(u) = (M_s ⊗_c u) ⊕_c b_s               M_s = I, b_s = 0 at init (b_s = exp_0 of a tangent)
    variant "a": z = exp_0(sum_{s<=t} w_s(u) log_0 T_s(u)),  w = softmax over seen tasks
    variant "b": z = T_t ∘ ... ∘ T_1 (u)
    anchors a_c = exp_0(alpha_text * text_c);  logits = -d(z, a_c)/tau + gamma * (-d(z, mu_c)/tau)
The task weighting w has two readings here (both "a lightweight task-weighting mechanism"):
  routing "keys": w_s(u) = softmax_s(max_{c in task s} cos(f, k_c) / tau_w) with k_c the mean
    feature of class c, stored when c is learned (a fixed linear map followed by a max);
  routing "learned": w = softmax(g(log_0 u)) with g a linear map whose row s is trained with T_s.
Alpha and alpha_text are fixed (config), not learned, so that no shared parameter moves the
features of classes already learned.

Parameters for all `max_tasks` adapters live in one tree (`m [T, d, d]`, `b [T, d]`,
`g [T, d]`); the current task index is traced, so one compiled step serves every task.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from projects.hypcl import poincare


class Ball(NamedTuple):
    """The geometry: the Poincaré ball of curvature -c, or flat space (`euclidean`), where exp/log
    are the identity, ⊕ is +, ⊗ is the matrix product and d is 2|x - y| (the c -> 0 limit)."""

    c: float
    euclidean: bool = False

    def exp0(self, v):
        return v if self.euclidean else poincare.project(poincare.expmap0(v, self.c), self.c)

    def log0(self, y):
        return y if self.euclidean else poincare.logmap0(y, self.c)

    def linear(self, m, b, x):
        if self.euclidean:
            return x @ m.T + b
        return poincare.hyperbolic_linear(m, self.exp0(b), x, self.c)

    def dist(self, x, y):
        """x [b, d] against y [k, d] -> [b, k]."""
        if self.euclidean:
            sq = jnp.sum(x * x, -1)[:, None] + jnp.sum(y * y, -1)[None] - 2 * x @ y.T
            return 2 * jnp.sqrt(jnp.maximum(sq, 1e-30))
        return poincare.pairwise_dist(x, y, self.c)


def init_adapters(max_tasks: int, dim: int) -> dict:
    """Identity adapters: m [T, d, d] = I, b [T, d] = 0, g [T, d] = 0 (NumPy float32: no eager
    JAX operation to compile per shape)."""
    return {
        "m": np.tile(np.eye(dim, dtype=np.float32), (max_tasks, 1, 1)),
        "b": np.zeros((max_tasks, dim), np.float32),
        "g": np.zeros((max_tasks, dim), np.float32),
    }


def task_weights(
    params: dict, f: jax.Array, u_log: jax.Array, task: jax.Array, routing: dict, kind: str
) -> jax.Array:
    """w [b, T] over seen tasks (s <= task). kind "keys" | "learned"; routing: {"keys": [K, d]
    class keys, "key_task": [K] task of each key (-1: not learned yet), "temperature": tau_w}."""
    seen = jnp.arange(params["g"].shape[0]) <= task
    if kind == "learned":
        scores = u_log @ params["g"].T
    else:
        keys, key_task = routing["keys"], routing["key_task"]
        sims = f @ keys.T / routing["temperature"]  # [b, K]
        onehot = key_task[None, :] == jnp.arange(params["g"].shape[0])[:, None]  # [T, K]
        scores = jnp.max(jnp.where(onehot[None], sims[:, None, :], -jnp.inf), -1)  # [b, T]
        scores = jnp.where(jnp.isfinite(scores), scores, -1e9)
    return jax.nn.softmax(jnp.where(seen, scores, -jnp.inf), -1)


def adapt(
    params: dict,
    f: jax.Array,
    task: jax.Array,
    ball: Ball,
    variant: str,
    alpha: float,
    routing: dict | None = None,
    routing_kind: str = "keys",
) -> jax.Array:
    """f [b, d] frozen features -> adapted points z [b, d] after tasks 0..task.

    variant "none": z = u (no adapter); "a": weighted tangent mean of every seen task's
    transform; "b": sequential composition; "single": adapter 0 alone (sequential fine-tuning and
    joint training). Adapted points are clipped to tangent norm <= alpha (`clip_tangent`)."""
    u = ball.exp0(alpha * f)
    if variant == "none":
        return u
    if variant == "single":
        z = ball.linear(params["m"][0], params["b"][0], u)
    elif variant == "b":

        def body(z, s):
            m, b, i = s
            return jnp.where(i <= task, ball.linear(m, b, z), z), None

        steps = (params["m"], params["b"], jnp.arange(params["m"].shape[0]))
        z = jax.lax.scan(body, u, steps)[0]
    elif variant == "a":
        each = jax.vmap(lambda m, b: ball.log0(ball.linear(m, b, u)))(params["m"], params["b"])
        w = task_weights(params, f, ball.log0(u), task, routing, routing_kind)  # [b, T]
        z = ball.exp0(jnp.einsum("bt,tbd->bd", w, each))
    else:
        raise ValueError(f"variant {variant!r} is not 'none', 'single', 'a' or 'b'")
    return clip_tangent(ball, z, alpha)


def clip_tangent(ball: Ball, z: jax.Array, radius: float) -> jax.Array:
    """z with its tangent vector log_0 z shortened to norm <= radius (feature clipping, Guo et
    al. 2022). Without it the cross-entropy on distances drives adapted points to the float32
    boundary of the ball (measured: median norm 0.99 after ten tasks), where their tangent means,
    the prototypes, stop separating classes. Applied in both geometries."""
    # |log_0 z| grows with |z| along the same ray, so the clip is a radial rescale of z to the
    # norm whose tangent norm is `radius`: tanh(sqrt(c) radius)/sqrt(c) in the ball.
    sc = jnp.sqrt(ball.c)
    max_norm = radius if ball.euclidean else jnp.tanh(sc * radius) / sc
    n = jnp.sqrt(jnp.maximum(jnp.sum(z * z, -1, keepdims=True), 1e-24))
    return z * jnp.minimum(1.0, max_norm / n)


def prototypes(ball: Ball, z: jax.Array, labels: jax.Array, num_classes: int) -> jax.Array:
    """mu_c = exp_0(mean_{i in c} log_0 z_i): [num_classes, d] (zeros for absent classes)."""
    onehot = jax.nn.one_hot(labels, num_classes)
    mean = onehot.T @ ball.log0(z) / jnp.maximum(onehot.sum(0), 1)[:, None]
    return ball.exp0(mean)


def logits(
    ball: Ball,
    z: jax.Array,
    anchors: jax.Array,
    protos: jax.Array,
    seen: jax.Array,
    gamma: float,
    tau: float,
) -> jax.Array:
    """z [b, d], anchors and protos [C, d], seen [C] bool -> [b, C]; unseen classes get -inf."""
    out = -ball.dist(z, anchors) / tau
    if gamma:
        out = out - gamma * ball.dist(z, protos) / tau
    return jnp.where(seen[None], out, -jnp.inf)
