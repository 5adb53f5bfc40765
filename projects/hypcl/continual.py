"""Class-incremental learning on frozen features: every method of the table, one protocol.

Classes arrive in tasks (no task id at test time). After task t a method is evaluated on the test
images of every class seen so far; `run_method` returns the per-class accuracies after each task,
from which metrics.py computes Last, Average incremental accuracy and forgetting.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from projects.hypcl.adapters import Ball, adapt, init_adapters, logits, prototypes

# method -> (geometry: "hyperbolic" | "euclidean", variant, prototypes used at inference)
METHODS = {
    "zero_shot": ("hyperbolic", "none", False),
    "ncm": ("euclidean", "none", True),
    "euclid": ("euclidean", "a", True),
    "hypcl_a": ("hyperbolic", "a", True),
    "hypcl_b": ("hyperbolic", "b", True),
    "seq_ft": ("hyperbolic", "single", False),
    "joint": ("hyperbolic", "single", False),
}


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    c: float = 1.0  # curvature -c of the ball (fixed, not learned)
    alpha: float = 1.0  # u = exp_0(alpha f): |alpha f| = alpha for unit features
    alpha_text: float = 1.0  # a_c = exp_0(alpha_text text_c)
    tau: float = 0.1  # logit temperature
    gamma: float = 1.0  # weight of the prototype term at inference
    steps_per_task: int = 200  # Adam steps on each task's data
    batch_size: int = 128
    lr: float = 3e-3
    routing: str = "keys"  # variant a's task weighting: "keys" or "learned" (adapters.py)
    routing_temperature: float = 0.01  # tau_w of the "keys" routing (cosines: near-hard routing)
    recompute_prototypes: bool = False  # ablation: prototypes recomputed after every task


class Split(NamedTuple):
    f: np.ndarray  # [n, d] float32 L2-normalized frozen features
    y: np.ndarray  # [n] int32 class ids 0..C-1, in the order classes arrive


class Stream(NamedTuple):
    """A class-incremental benchmark: classes 0..C-1 arrive in `tasks` (lists of ids)."""

    train: Split
    test: Split
    text: np.ndarray  # [C, d_t] L2-normalized text embeddings of the class prompts
    tasks: tuple[tuple[int, ...], ...]


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@functools.cache
def _compiled(
    ball: Ball, variant: str, routing_kind: str, alpha: float, tau: float, lr: float, max_tasks: int
):
    """The jitted train step and embedding for one geometry/variant (cached: every seed, method
    and ablation with the same settings shares the compilation)."""
    tx = optax.adam(lr)

    def embed(params, f, task, routing):
        return adapt(params, f, task, ball, variant, alpha, routing, routing_kind)

    def loss_fn(params, f, y, task, seen, anchors, routing):
        z = embed(params, f, task, routing)
        lg = logits(ball, z, anchors, anchors, seen, 0.0, tau)
        return optax.softmax_cross_entropy_with_integer_labels(lg, y).mean()

    @jax.jit
    def step(params, opt_state, f, y, task, seen, anchors, routing):
        loss, grads = jax.value_and_grad(loss_fn)(params, f, y, task, seen, anchors, routing)
        slot = 0 if variant == "single" else task
        only = jax.nn.one_hot(slot, max_tasks)  # only the current adapter (and g row) trains
        grads = jax.tree.map(lambda g: g * only.reshape(-1, *([1] * (g.ndim - 1))), grads)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(tx.init), step, jax.jit(embed)


def run_method(
    method: str, stream: Stream, cfg: LearnerConfig, seed: int, observe=None
) -> list[np.ndarray]:
    """Per-class test accuracy [C] after each task (classes not yet seen: NaN). `observe(t,
    params, prototypes)`, when given, sees the learner's state after each task."""
    geometry, variant, use_protos = METHODS[method]
    ball = Ball(cfg.c, euclidean=geometry == "euclidean")
    num_classes, dim = len(stream.text), stream.train.f.shape[1]
    max_tasks = len(stream.tasks)
    anchors = _exp0(ball, jnp.asarray(cfg.alpha_text * _unit(stream.text)))
    if anchors.shape[1] != dim:
        raise ValueError(f"text embeddings are {anchors.shape[1]}-d but features {dim}-d")
    params = init_adapters(max_tasks, dim)
    init_opt, step, embed = _compiled(
        ball, variant, cfg.routing, cfg.alpha, cfg.tau, cfg.lr, max_tasks
    )
    rng = np.random.default_rng(seed)
    keys = np.zeros((num_classes, dim), np.float32)
    key_task = np.full(num_classes, -1, np.int32)
    protos = np.zeros((num_classes, dim), np.float32)
    seen = np.zeros(num_classes, bool)
    train_y = stream.train.y
    history = []
    for t, classes in enumerate(stream.tasks):
        classes = np.asarray(classes)
        seen[classes] = True
        for c in classes:
            keys[c] = _unit(stream.train.f[train_y == c].mean(0))
        key_task[classes] = t
        routing = {"keys": jnp.asarray(keys), "key_task": jnp.asarray(key_task),
                   "temperature": jnp.float32(cfg.routing_temperature)}  # fmt: skip
        learn = np.isin(train_y, np.flatnonzero(seen) if method == "joint" else classes)
        idx = np.flatnonzero(learn)
        if variant != "none":
            # A fresh Adam per task: a shared step count would skip the bias correction of the
            # new adapter's zero moments and take steps ~3x lr on it.
            opt_state = init_opt(params)
            for _ in range(cfg.steps_per_task):
                b = rng.choice(idx, min(cfg.batch_size, len(idx)), replace=False)
                params, opt_state, loss = step(
                    params, opt_state, stream.train.f[b], train_y[b], t, seen, anchors, routing
                )
            if not np.isfinite(float(loss)):
                raise FloatingPointError(f"{method}: loss {float(loss)} on task {t}; lower lr")
        if use_protos:  # every call embeds the whole split: one compiled shape per split
            refresh = np.isin(
                np.arange(num_classes),
                np.flatnonzero(seen) if cfg.recompute_prototypes else classes,
            )
            z = embed(params, stream.train.f, t, routing)
            labels = np.where(refresh[train_y], train_y, num_classes)  # others: a dropped class
            protos = _refresh_prototypes(ball, z, labels, refresh, protos)
        if observe is not None:
            observe(t, params, protos)
        z = embed(params, stream.test.f, t, routing)
        history.append(_evaluate(method, ball, z, stream.test.y, anchors, protos, seen,
                                 cfg if use_protos else None))  # fmt: skip
    return history


# The evaluation is jitted whole: op by op, each of its ~20 eager operations compiled on its own
# for every new shape (measured: ~0.26 s each on CPU, most of a short run's time).
@functools.partial(jax.jit, static_argnums=0)
def _exp0(ball, v):
    return ball.exp0(v)


@functools.partial(jax.jit, static_argnums=0)
def _refresh_prototypes(ball, z, labels, refresh, protos):
    """Prototypes of the classes flagged in `refresh` from embeddings z; others kept."""
    num_classes = protos.shape[0]
    new = prototypes(ball, z, labels, num_classes + 1)[:num_classes]  # label C: dropped rows
    return jnp.where(refresh[:, None], new, protos)


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _predict(ball, ncm, gamma, tau, z, anchors, protos, seen):
    if ncm:  # prototypes alone, Euclidean, no text
        lg = jnp.where(seen[None], -ball.dist(z, protos), -jnp.inf)
    else:
        lg = logits(ball, z, anchors, protos, seen, gamma, tau)
    return jnp.argmax(lg, -1)


def _evaluate(method, ball, z, y, anchors, protos, seen, cfg):
    gamma, tau = (cfg.gamma, cfg.tau) if cfg is not None else (0.0, 1.0)
    pred = np.asarray(_predict(ball, method == "ncm", gamma, tau, z, anchors, protos, seen))
    acc = np.full(len(seen), np.nan)
    for c in np.flatnonzero(seen):
        acc[c] = np.mean(pred[y == c] == c)
    return acc


def make_stream(
    train: Split, test: Split, text: np.ndarray, num_tasks: int, order_seed: int
) -> Stream:
    """Relabels classes in a seeded random order and cuts them into `num_tasks` equal tasks."""
    num_classes = len(text)
    if num_classes % num_tasks:
        raise ValueError(f"{num_classes} classes do not split into num_tasks={num_tasks} tasks")
    order = np.random.default_rng(order_seed).permutation(num_classes)
    rank = np.argsort(order)  # old id -> position in the order
    k = num_classes // num_tasks
    return Stream(
        Split(train.f, rank[train.y].astype(np.int32)),
        Split(test.f, rank[test.y].astype(np.int32)),
        text[order],
        tuple(tuple(range(t * k, (t + 1) * k)) for t in range(num_tasks)),
    )


def summarize(history: list[np.ndarray], tasks) -> dict[str, float]:
    """A_t = accuracy over the test images of every class seen after task t (classes weigh
    equally: every class has the same number of test images here); Last = A_T; Avg = mean_t A_t;
    forgetting = mean over classes learned before the last task of (best earlier accuracy -
    final accuracy)."""
    a = [float(np.nanmean(h)) for h in history]
    final = history[-1]
    earlier = [c for task in tasks[:-1] for c in task]
    forget = [max(h[c] for h in history[:-1] if not np.isnan(h[c])) - final[c] for c in earlier]
    return {"last": a[-1], "avg": float(np.mean(a)),
            "forgetting": float(np.mean(forget)) if forget else 0.0}  # fmt: skip
