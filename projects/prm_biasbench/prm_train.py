"""Training a PRM: binary cross-entropy on the step logits at the step tags (spec §5).

Both PRMs train through the shared loop (checkpoints, resume, SIGTERM, NaN checks). The trainable
part of the model is a filter (MiniLM: the head and the top `trainable_layers` blocks; the
decoder: everything); the frozen rest is an argument of the jitted step, not a constant baked into
it, and is rebuilt from its source (the packaged MiniLM) on resume.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.prm_biasbench.prm_models import gather_steps
from projects.prm_biasbench.processors import Encoded, collate
from shared import rng
from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.pipeline import batch_iterator
from shared.train import adamw_no_decay_on_vectors, train_loop, warmup_cosine


@dataclasses.dataclass(frozen=True)
class PRMTrainConfig:
    steps: PositiveInt = 600  # optimizer steps
    batch_size: PositiveInt = 32  # solutions per step
    lr: PositiveFloat = 1e-3  # peak learning rate (warm-up, then cosine to 0)
    warmup_steps: NonNegativeInt = 50
    weight_decay: NonNegativeFloat = 0.01  # AdamW, not on 1-D tensors
    log_every: PositiveInt = 50  # steps per metrics.jsonl row
    checkpoint_every: NonNegativeInt = 0  # 0: only at the end and on SIGTERM


def step_bce(logits: jax.Array, labels: jax.Array, mask: jax.Array) -> tuple[jax.Array, dict]:
    """Mean binary cross-entropy over the real steps; logits, labels, mask [B, K]."""
    w = mask.astype(jnp.float32)
    losses = optax.sigmoid_binary_cross_entropy(logits, labels)
    loss = jnp.sum(losses * w) / jnp.maximum(jnp.sum(w), 1.0)
    acc = jnp.sum(((logits > 0) == (labels > 0.5)) * w) / jnp.maximum(jnp.sum(w), 1.0)
    return loss, {"loss": loss, "step_acc": acc}


def training_arrays(
    rows: Sequence[Encoded], labels: Sequence[Sequence[int]], pad_id: int
) -> dict[str, np.ndarray]:
    """Every example collated to one width, with labels [N, K] (0 where there is no step)."""
    if len(rows) != len(labels) or any(len(r.ends) != len(y) for r, y in zip(rows, labels)):
        raise ValueError("every encoded solution needs one label per step")
    arrays = collate(rows, pad_id)
    arrays["labels"] = np.zeros(arrays["ends"].shape, np.float32)
    for i, y in enumerate(labels):
        arrays["labels"][i, : len(y)] = y
    return arrays


def train_prm(
    model: nnx.Module,
    trainable: Callable | type,
    arrays: dict[str, np.ndarray],
    cfg: PRMTrainConfig,
    seed: int,
    checkpoint_dir: pathlib.Path | None,
    metrics_path: pathlib.Path | None,
    name: str,
) -> nnx.Module:
    """Trains the parameters of `model` selected by the nnx filter `trainable` in place; returns
    the model. `arrays` from `training_arrays`."""
    graphdef, params, rest = nnx.split(model, trainable, ...)
    tx = adamw_no_decay_on_vectors(
        warmup_cosine(cfg.lr, cfg.steps, cfg.warmup_steps), cfg.weight_decay
    )
    state = {"params": params, "opt": tx.init(params)}

    @functools.partial(jax.jit, donate_argnums=0)
    def step(state, rest, batch):
        def loss_fn(p):
            logits = nnx.merge(graphdef, p, rest)(batch)
            steps = gather_steps(logits, batch["ends"])
            return step_bce(steps, batch["labels"], batch["ends_valid"])

        grads, metrics = jax.grad(loss_fn, has_aux=True)(state["params"])
        updates, opt = tx.update(grads, state["opt"], state["params"])
        return {"params": optax.apply_updates(state["params"], updates), "opt": opt}, metrics

    batches = batch_iterator(arrays, cfg.batch_size, int(rng.numpy_rng(seed, name).integers(2**31)))
    state = train_loop(
        state=state,
        step_fn=lambda s, b, i: step(s, rest, b),
        batches=batches,
        num_steps=cfg.steps,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=cfg.checkpoint_every,
        metrics_path=metrics_path,
        name=name,
        items_per_step=cfg.batch_size,
        log_every=cfg.log_every,
    )
    nnx.update(model, state["params"])
    return model
