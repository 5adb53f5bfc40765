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
    # weight of an auxiliary next-token loss on the correct solutions (decoder PRM only; 0: off)
    lm_weight: NonNegativeFloat = 0.0
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
    # next-token targets: the solution tokens (blocks >= 1) of solutions without a wrong step
    clean = np.array([min(y) == 1 for y in labels])
    arrays["lm_mask"] = (arrays["blocks"] >= 1) & clean[:, None]
    return arrays


def lm_loss(logits: jax.Array, ids: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean next-token cross-entropy; logits [B, S, V] predict ids[:, 1:] where mask[:, 1:]."""
    logp = jax.nn.log_softmax(logits[:, :-1], axis=-1)
    nll = -jnp.take_along_axis(logp, ids[:, 1:, None], axis=-1)[..., 0]
    w = mask[:, 1:].astype(jnp.float32)
    return jnp.sum(nll * w) / jnp.maximum(jnp.sum(w), 1.0)


def targets(batch: dict) -> tuple[jax.Array, jax.Array]:
    return batch["labels"], batch["ends_valid"]


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
            model = nnx.merge(graphdef, p, rest)
            if not cfg.lm_weight:
                logits = model(batch)
                return step_bce(gather_steps(logits, batch["ends"]), *targets(batch))
            logits, lm_logits = model(batch, with_lm=True)
            loss, metrics = step_bce(gather_steps(logits, batch["ends"]), *targets(batch))
            lm = lm_loss(lm_logits, batch["ids"], batch["lm_mask"])
            return loss + cfg.lm_weight * lm, metrics | {
                "loss": loss + cfg.lm_weight * lm,
                "lm": lm,
            }

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
