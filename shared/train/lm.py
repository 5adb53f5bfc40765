"""Next-token pretraining and evaluation of a decoder on packed token windows.

Windows are `[n, seq_len + 1]` token arrays (shared.data.lm_pipeline.pack_documents): inputs are
`w[:, :-1]`, targets `w[:, 1:]`. The optimizer is an argument, so optimizer studies (e.g. SCALE)
reuse this loop unchanged; the default is AdamW with warm-up and cosine decay.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared.data.pipeline import batch_iterator
from shared.models.llama import next_token_loss
from shared.train.checkpoint import Checkpointer
from shared.train.loop import train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors


@dataclasses.dataclass(frozen=True)
class LMTrainConfig:
    steps: int = 300  # optimizer steps
    batch_size: int = 32  # windows per step
    lr: float = 3e-3  # peak learning rate
    warmup_fraction: float = 0.1  # linear warm-up share of the steps
    final_lr_fraction: float = 0.1  # cosine decays to lr * this
    weight_decay: float = 0.0  # AdamW decay on matrices (never on 1-D gains)
    seed: int = 0  # data order
    eval_every: int = 100  # steps between validation losses (0: only at the end)
    eval_windows: int = 256  # validation windows per intermediate evaluation (all at the end)


def default_optimizer(cfg: LMTrainConfig) -> optax.GradientTransformation:
    warmup = int(cfg.warmup_fraction * cfg.steps)
    schedule = optax.warmup_cosine_decay_schedule(
        0.0, cfg.lr, warmup, max(cfg.steps, warmup + 1), cfg.lr * cfg.final_lr_fraction
    )
    return adamw_no_decay_on_vectors(schedule, cfg.weight_decay)


def window_loss(model: nnx.Module, windows: jax.Array) -> jax.Array:
    """Mean next-token cross-entropy (nats) of windows [B, L + 1]."""
    return next_token_loss(model(windows[:, :-1]), windows[:, 1:])


@functools.partial(jax.jit, static_argnums=0)
def _per_window_loss(graphdef, state, windows):
    """[B, L + 1] -> [B] mean next-token loss of each window."""
    logits = nnx.merge(graphdef, state)(windows[:, :-1])
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(logp, windows[:, 1:, None], axis=-1)[..., 0].mean(-1)


def evaluate_lm(model: nnx.Module, windows: np.ndarray, batch_size: int = 32) -> float:
    """Mean next-token loss in nats over all `windows` (equal lengths, so a plain mean)."""
    if len(windows) == 0:
        raise ValueError("no validation windows: the split is shorter than one window")
    graphdef, state = nnx.split(model)
    total = 0.0
    for i in range(0, len(windows), batch_size):
        chunk = windows[i : i + batch_size]
        n = len(chunk)
        # A short last batch is padded with copies so one compiled shape serves every batch.
        padded = np.concatenate([chunk, np.repeat(chunk[:1], batch_size - n, 0)])
        total += float(jnp.sum(_per_window_loss(graphdef, state, jnp.asarray(padded))[:n]))
    return total / len(windows)


def train_lm(
    model: nnx.Module,
    train_windows: np.ndarray,
    val_windows: np.ndarray,
    cfg: LMTrainConfig,
    *,
    tx: optax.GradientTransformation | None = None,
    workdir: pathlib.Path | None = None,
) -> dict[str, list]:
    """Trains `model` in place; returns {"step": [...], "val_loss": [...]} (nats per token).

    With `workdir`, checkpoints go to workdir/checkpoints (resumed automatically) and training
    losses to workdir/metrics.jsonl."""
    tx = tx or default_optimizer(cfg)
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))

    @jax.jit
    def step_fn(state, batch, step):
        model, optimizer = nnx.merge(graphdef, state)
        loss, grads = nnx.value_and_grad(window_loss)(model, batch["tokens"])
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), {"loss": loss}

    batches = batch_iterator({"tokens": train_windows}, cfg.batch_size, cfg.seed)
    checkpointer = None if workdir is None else Checkpointer(workdir / "checkpoints")
    rng = np.random.default_rng(cfg.seed)
    probe = val_windows[rng.permutation(len(val_windows))[: cfg.eval_windows]]
    history: dict[str, list] = {"step": [], "val_loss": []}
    every = cfg.eval_every or cfg.steps
    resumed_at = (checkpointer.latest_step() if checkpointer else None) or 0
    for stop in range(every, cfg.steps + every, every):
        stop = min(stop, cfg.steps)
        if stop < min(resumed_at, cfg.steps):
            continue  # already trained past this evaluation point in an earlier run
        state = train_loop(
            state=state,
            step_fn=step_fn,
            batches=batches,
            num_steps=stop,
            checkpointer=checkpointer,
            metrics_path=None if workdir is None else workdir / "metrics.jsonl",
            name="lm",
            items_per_step=cfg.batch_size * (train_windows.shape[1] - 1),
        )
        nnx.update((model, optimizer), state)
        final = stop == cfg.steps
        loss = evaluate_lm(model, val_windows if final else probe, cfg.batch_size)
        if not math.isfinite(loss):
            raise FloatingPointError(f"validation loss is {loss} at step {stop}")
        history["step"].append(stop)
        history["val_loss"].append(loss)
    if checkpointer is not None:
        checkpointer.close()
    return history
