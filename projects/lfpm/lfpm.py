"""LFPM: an anti-backdoor task vector τ_a learned along the path θ(s) = θ_m + s · τ_a.

Reconstruction (not confirmed by the paper, see the README):

    L(τ_a) = (1/S) Σ_{j=1..S} [ ℓ_bd(θ(s_j)) + μ · ℓ_clean(θ(s_j)) ],   s_j = j / S
    ℓ_bd    = CE(h_a(f(θ(s); x̃)), y)                 triggered D_c inputs of the attacked task,
                                                       their TRUE labels (the defender knows the
                                                       trigger: an upper bound)
    ℓ_clean = mean over tasks t of  ‖f(θ(s); x) − f(θ_m; x)‖² / dim  +  CE(h_t(f(θ(s); x)), y)

on D_c of every task; the feature anchor is divided by the feature width (a mean per coordinate)
so that μ = 1 weighs it like one cross-entropy. S = 1 (s = 1 only) is the single-point ablation.
Gradient accumulation: per minibatch the gradient w.r.t. τ_a is summed over the S path points
(one backward pass each, memory of one point), divided by S, then one Adam step is taken; the
result equals the gradient of the averaged loss (tested). The heads are frozen; τ_a is a dense
tree (full fine-tuning) or LoRA factors on the task LoRAs' kernels (PEFT), starting at τ_a = 0.
Deployed: θ_m + τ_a (s = 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from projects.lfpm.model import Delta, Encoder, at, ce, check_finite, logits, make_trainer, sample
from shared.data.augment import add_trigger

PyTree = Any


def path_points(num_points: int) -> jax.Array:
    """s_j = j / S for j = 1..S: [S]."""
    return jnp.arange(1, num_points + 1, dtype=jnp.float32) / num_points


def point_loss(
    feats: Callable, dense: Callable, delta: PyTree, batch: dict, s: jax.Array, mu: float
) -> jax.Array:
    """ℓ_bd + μ · ℓ_clean at θ(s) = batch["anchor"] + s · dense(delta).

    batch: anchor (θ_m), heads (tuple), x / y (tuples over tasks, [b, ...]), anchor_z (tuple of
    f(θ_m; x) [b, dim]), x_bd [b, ...] triggered inputs of the attacked task, y_bd [b] their
    true labels, attacked (int, static)."""
    theta = at(batch["anchor"], dense(delta), s)
    clean = []
    for head, x, y, z0 in zip(batch["heads"], batch["x"], batch["y"], batch["anchor_z"]):
        z = feats(theta, x)
        clean.append(jnp.mean(jnp.sum((z - z0) ** 2, -1)) / z.shape[-1] + ce(logits(head, z), y))
    bd_head = batch["heads"][batch["attacked"]]
    bd = ce(logits(bd_head, feats(theta, batch["x_bd"])), batch["y_bd"])
    return bd + mu * jnp.mean(jnp.stack(clean))


def path_loss(feats, dense, delta, batch, num_points: int, mu: float) -> jax.Array:
    """(1/S) Σ_j point_loss(s_j): the path integral by the right Riemann sum."""
    losses = [point_loss(feats, dense, delta, batch, s, mu) for s in path_points(num_points)]
    return jnp.mean(jnp.stack(losses))


def accumulated_grad(feats, dense, delta, batch, num_points: int, mu: float):
    """(path loss, its gradient) by accumulating ∇ point_loss(s_j) over j = 1..S in a scan
    (unrolled: XLA:CPU runs convolutions inside a rolled loop much slower)."""

    def one(acc, s):
        loss, g = jax.value_and_grad(point_loss, argnums=2)(feats, dense, delta, batch, s, mu)
        return (acc[0] + loss, jax.tree.map(jnp.add, acc[1], g)), None

    zero = (jnp.zeros(()), jax.tree.map(jnp.zeros_like, delta))
    (total, grads), _ = jax.lax.scan(one, zero, path_points(num_points), unroll=True)
    return total / num_points, jax.tree.map(lambda g: g / num_points, grads)


def clean_data(theta_m, heads, clean_sets) -> dict:
    """What a defense trains on: the merged encoder, the frozen heads and D_c of every task."""
    return {
        "anchor": theta_m,
        "heads": tuple(heads),
        "x": tuple(x for x, _ in clean_sets),
        "y": tuple(y for _, y in clean_sets),
    }


def make_batch(data: dict, key: jax.Array, batch_size: int, trigger_size: int, feats) -> dict:
    """A minibatch of b inputs per task from D_c; the attacked task's inputs also triggered."""
    xs, ys, zs = [], [], []
    for i, (x, y) in enumerate(zip(data["x"], data["y"])):
        idx = sample(jax.random.fold_in(key, i), x.shape[0], batch_size)
        xs.append(x[idx])
        ys.append(y[idx])
        zs.append(jax.lax.stop_gradient(feats(data["anchor"], x[idx])))
    a = data["attacked"]
    return {"anchor": data["anchor"], "heads": data["heads"], "x": tuple(xs), "y": tuple(ys),
            "anchor_z": tuple(zs), "x_bd": add_trigger(xs[a], size=trigger_size), "y_bd": ys[a],
            "attacked": a}  # fmt: skip


class LFPM:
    """Compiled LFPM training for one encoder, parametrization and number of path points.

    cfg: DefenseConfig (steps, batch_size, lr/lora_lr, mu); trigger_size: the known trigger."""

    def __init__(self, encoder: Encoder, delta: Delta, cfg, num_points: int, trigger_size: int,
                 attacked: int):  # fmt: skip
        self.delta, self.num_points = delta, num_points
        self.lr = cfg.lora_lr if delta.kind == "lora" else cfg.lr
        feats = encoder.features

        def grad_fn(params, data, key):
            batch = make_batch({**data, "attacked": attacked}, key, cfg.batch_size,
                               trigger_size, feats)  # fmt: skip
            return accumulated_grad(feats, delta.dense, params, batch, num_points, cfg.mu)

        self._train = make_trainer(grad_fn, optax.adam(self.lr), cfg.steps)

    def fit(self, theta_m, heads, clean_sets, key: jax.Array) -> PyTree:
        """Dense τ_a for the merged encoder θ_m; clean_sets: [(x, y)] D_c per task."""
        k_init, k_train = jax.random.split(key)
        data = clean_data(theta_m, heads, clean_sets)
        params, loss = self._train(self.delta.init(k_init), data, k_train)
        check_finite(loss, f"LFPM (S = {self.num_points})", self.lr)
        return self.delta.dense(params)
