"""The merged model, functionally: an encoder (shared/models/image_encoders.py) given by its
`nnx.Param` state as a pure dict, per-task linear heads, and the parametrization of a trainable
delta on top of an anchor encoder (full fine-tuning: a dense tree; PEFT: rank-r LoRA factors).

Every training in this project (task fine-tuning, the attack, the defenses, LFPM) trains such a
delta δ on an anchor θ_a and reads the encoder θ_a + s · dense(δ); only the encoder is merged,
each task keeps its own head.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared.models import lora as lora_lib
from shared.models.image_encoders import image_encoder

PyTree = Any


class Encoder:
    """Pure functions of (params, images) for one encoder architecture (one graphdef)."""

    def __init__(self, module: nnx.Module):
        self.graphdef, state = nnx.split(module, nnx.Param)
        self.init_params = nnx.to_pure_dict(state)
        self.dim = module.dim

    def features(self, params: PyTree, x: jax.Array) -> jax.Array:
        """x: [b, H, W, C] -> [b, dim]."""
        return nnx.merge(self.graphdef, params)(x)

    def layer_features(self, params: PyTree, x: jax.Array) -> dict[str, jax.Array]:
        return nnx.merge(self.graphdef, params).layer_features(x)


def build_encoder(cfg, image_shape: tuple[int, int, int], key: jax.Array) -> nnx.Module:
    """cfg: EncoderConfig. image_shape: (H, W, C) of the data."""
    h, w, c = image_shape
    if h != w:
        raise ValueError(f"square images are expected, got {image_shape}")
    if cfg.kind == "cnn":
        kw = {"widths": cfg.widths}
    else:
        kw = dict(patch=cfg.patch, depth=cfg.depth, heads=cfg.heads, width=cfg.width or None)
    return image_encoder(cfg.kind, h, c, cfg.dim, rngs=nnx.Rngs(key), **kw)


def init_head(key: jax.Array, dim: int, num_classes: int) -> dict[str, jax.Array]:
    """A linear head {"w": [dim, k], "b": [k]}."""
    return {"w": jax.random.normal(key, (dim, num_classes)) / np.sqrt(dim),
            "b": jnp.zeros((num_classes,))}  # fmt: skip


def logits(head: dict[str, jax.Array], z: jax.Array) -> jax.Array:
    """z: [b, dim] -> [b, k]."""
    return z @ head["w"] + head["b"]


def ce(lg: jax.Array, y: jax.Array) -> jax.Array:
    return optax.softmax_cross_entropy_with_integer_labels(lg, y).mean()


class Delta:
    """How a trainable delta δ becomes a dense encoder task vector: "full" (δ is the dense tree,
    initialised at 0) or "lora" (δ holds LoRA factors with B = 0, dense(δ) = A @ B per kernel)."""

    def __init__(self, kind: str, template: PyTree, rank: int = 4):
        if kind not in ("full", "lora"):
            raise ValueError(f"finetune={kind!r} is not 'full' or 'lora'")
        self.kind, self.template, self.rank = kind, template, rank

    def init(self, key: jax.Array) -> PyTree:
        if self.kind == "full":
            return jax.tree.map(jnp.zeros_like, self.template)
        return lora_lib.init_lora(self.template, self.rank, key)

    def dense(self, delta: PyTree) -> PyTree:
        if self.kind == "full":
            return delta
        return lora_lib.lora_delta(self.template, delta)


def at(anchor: PyTree, dense: PyTree, s: float | jax.Array = 1.0) -> PyTree:
    """θ_a + s · dense."""
    return jax.tree.map(lambda a, d: a + s * d, anchor, dense)


def sample(key: jax.Array, n: int, b: int) -> jax.Array:
    """b indices in 0..n-1 without replacement (with replacement when b > n)."""
    if b > n:
        return jax.random.randint(key, (b,), 0, n)
    return jax.random.choice(key, n, (b,), replace=False)


def make_trainer(
    grad_fn: Callable, tx: optax.GradientTransformation, steps: int
) -> Callable:
    """`train(params, data, key) -> (params, final loss)` running `steps` optimizer steps;
    `grad_fn(params, data, key_i) -> (loss, grads)` with key_i = fold_in(key, i) (e.g.
    `jax.value_and_grad(loss)`). The step is jitted once per trainer and reused for every call
    with the same shapes. A Python loop over jitted steps, not `lax.scan`: on XLA:CPU the
    convolutions inside a while loop ran 10-20x slower (measured, 2 cores)."""

    @jax.jit
    def step(params, opt_state, data, key, i):
        loss, grads = grad_fn(params, data, jax.random.fold_in(key, i))
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    def train(params, data, key):
        data = jax.device_put(data)  # once, not at every step
        opt_state = tx.init(params)
        loss = jnp.nan
        for i in range(steps):
            params, opt_state, loss = step(params, opt_state, data, key, jnp.int32(i))
        return params, loss

    return train


def check_finite(loss: jax.Array, what: str, lr: float) -> float:
    value = float(loss)
    if not np.isfinite(value):
        raise FloatingPointError(f"{what}: final loss is {value}; lower its lr (now {lr})")
    return value


class Evaluator:
    """Accuracy of (encoder params, head) on fixed-size chunks (one compilation per size); a
    split smaller than a chunk is one chunk of its own size (padding it would waste compute)."""

    def __init__(self, encoder: Encoder, chunk: int = 500):
        self.chunk = chunk

        @jax.jit
        def predict(params, head, x):
            return jnp.argmax(logits(head, encoder.features(params, x)), -1)

        self._predict = predict

    def predict(self, params: PyTree, head: dict, x: np.ndarray) -> np.ndarray:
        n = len(x)
        c = min(self.chunk, max(n, 1))
        pad = (-n) % c
        xp = np.concatenate([x, np.zeros((pad, *x.shape[1:]), x.dtype)]) if pad else x
        out = [np.asarray(self._predict(params, head, xp[i:i + c])) for i in range(0, len(xp), c)]
        return np.concatenate(out)[:n]

    def accuracy(self, params: PyTree, head: dict, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(self.predict(params, head, x) == y))


def attack_success_rate(pred_triggered: np.ndarray, y_true: np.ndarray, target: int) -> float:
    """Share of triggered inputs whose true label is not the target that are classified as the
    target (inputs of the target class are excluded)."""
    keep = y_true != target
    if not keep.any():
        raise ValueError("no test input outside the target class: ASR is undefined")
    return float(np.mean(pred_triggered[keep] == target))
