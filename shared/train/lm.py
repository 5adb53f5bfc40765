"""Next-token pretraining and evaluation of a decoder on packed token windows.

Windows are `[n, seq_len + 1]` token arrays (shared.data.lm_pipeline.pack_documents): inputs are
`w[:, :-1]`, targets `w[:, 1:]`. One trainer serves every LM phase of the repo (SCALE's optimizer
study, attn_qat's pretraining and QAT phases): the optimizer is an argument (default: AdamW with
the shared warm-up + cosine, optional clipping, from `LMTrainConfig`), and so are per-step metrics
of the gradients (e.g. `global_grad_norm`), the log interval, a mesh to place each batch on, and
the phase name, which names the checkpoint subdirectory and the `phase` field of metrics.jsonl.
The validation curve is saved beside the phase's checkpoints, so a resumed run returns the whole
curve; given `uniform_loss` (ln V, the loss of a model that predicts every token equally), a run
whose validation loss comes within `DIVERGED_MARGIN` of it stops with `DivergedError` instead of
reporting a collapsed model's numbers.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import pathlib
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from jax.sharding import Mesh

from shared.config import (
    Fraction,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)
from shared.data.lm_pipeline import lm_batches
from shared.distributed import global_batch, onto_mesh
from shared.models.llama import next_token_loss
from shared.results import is_writer
from shared.train.loop import DivergedError, latest_checkpoint_step, train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine

DIVERGED_MARGIN = 0.01  # nats: a model this close to uniform has learned nothing


@dataclasses.dataclass(frozen=True)
class LMTrainConfig:
    steps: PositiveInt = 300  # optimizer steps
    batch_size: PositiveInt = 32  # windows per step
    lr: PositiveFloat = 3e-3  # peak learning rate
    warmup_fraction: Fraction = 0.1  # linear warm-up share of the steps
    final_lr_fraction: Fraction = 0.1  # cosine decays to lr * this
    weight_decay: NonNegativeFloat = 0.0  # AdamW decay on matrices (never on 1-D gains)
    grad_clip: NonNegativeFloat = 0.0  # global-norm clip of the gradients before AdamW (0: none)
    seed: NonNegativeInt = 0  # data order
    eval_every: NonNegativeInt = 100  # steps between validation losses (0: only at the end)
    eval_windows: PositiveInt = 256  # validation windows per intermediate evaluation (all at end)


def default_optimizer(cfg: LMTrainConfig) -> optax.GradientTransformation:
    """AdamW (no decay on 1-D tensors, optional clipping) on the shared warm-up + cosine."""
    schedule = warmup_cosine(
        cfg.lr, cfg.steps, int(cfg.warmup_fraction * cfg.steps), cfg.final_lr_fraction
    )
    return adamw_no_decay_on_vectors(schedule, cfg.weight_decay, grad_clip=cfg.grad_clip)


def global_grad_norm(grads: nnx.State) -> dict[str, jax.Array]:
    """A `grad_metrics` for `train_lm`: the global L2 norm of the gradients (before clipping)."""
    return {"grad_norm": optax.global_norm(grads)}


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
    val_windows: np.ndarray | None,
    cfg: LMTrainConfig,
    *,
    tx: optax.GradientTransformation | None = None,
    workdir: pathlib.Path | None = None,
    phase: str = "lm",
    checkpoints: bool = True,
    grad_metrics: Callable[[nnx.State], dict[str, jax.Array]] | None = None,
    log_every: int = 50,
    mesh: Mesh | None = None,
    uniform_loss: float | None = None,
    checkpoint_every: int = 0,
) -> dict[str, list]:
    """Trains `model` in place on windows [n, L + 1]; returns {"step": [...], "val_loss": [...]}
    (nats per token; empty lists when `val_windows` is None: no evaluation).

    `tx` replaces the optimizer built from `cfg` (`default_optimizer`). With `workdir`, training
    losses (and `grad_metrics(grads)` of every step, averaged per `log_every` steps) go to
    workdir/metrics.jsonl under `phase`, and unless `checkpoints=False` the phase checkpoints to
    workdir/checkpoints/<phase> and resumes from there automatically. `mesh`: each batch is
    split over its "data" axis, each process reading its own rows (multi-host; the model's own
    sharding is the caller's).
    `uniform_loss`: a validation loss above `uniform_loss - DIVERGED_MARGIN` raises
    `DivergedError`. Checkpoints are saved at every evaluation point, at the end and every
    `checkpoint_every` steps (0: no more).
    """
    tx = tx or default_optimizer(cfg)
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    if mesh is not None:
        state = onto_mesh(state, mesh)

    @jax.jit
    def step(state, batch, step):
        model, optimizer = nnx.merge(graphdef, state)
        loss, grads = nnx.value_and_grad(window_loss)(model, batch["tokens"])
        metrics = {"loss": loss, **(grad_metrics(grads) if grad_metrics else {})}
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), metrics

    if mesh is None:
        step_fn = step
    else:  # each process reads its rows of the batch; they arrive split over "data"

        def step_fn(state, batch, i):
            return step(state, global_batch(batch, mesh), i)

    batches = lm_batches(train_windows, cfg.batch_size, cfg.seed, process_rows=mesh is not None)
    ckpt_dir = workdir / "checkpoints" / phase if workdir is not None and checkpoints else None
    history: dict[str, list] = {"step": [], "val_loss": []}
    if val_windows is None:
        stops = [cfg.steps]
    else:
        rng = np.random.default_rng(cfg.seed)
        probe = val_windows[rng.permutation(len(val_windows))[: cfg.eval_windows]]
        every = cfg.eval_every or cfg.steps
        stops = [min(stop, cfg.steps) for stop in range(every, cfg.steps + every, every)]
    resumed_at = latest_checkpoint_step(ckpt_dir) or 0
    curve = None if ckpt_dir is None else ckpt_dir.parent / f"{phase}.history.json"
    if curve is not None and curve.exists() and resumed_at:
        saved = json.loads(curve.read_text())
        # points before the resume step; the one at it (if any) is evaluated again below
        keep = [i for i, s in enumerate(saved["step"]) if s < resumed_at]
        history = {k: [saved[k][i] for i in keep] for k in history}
    announce = True  # the first segment may resume an earlier run; later ones continue this one
    for stop in stops:
        if stop < min(resumed_at, cfg.steps):
            continue  # already trained past this evaluation point in an earlier run
        state = train_loop(
            state=state,
            step_fn=step_fn,
            batches=batches,
            num_steps=stop,
            checkpoint_dir=ckpt_dir,
            checkpoint_every=checkpoint_every,
            metrics_path=None if workdir is None else workdir / "metrics.jsonl",
            name=phase,
            items_per_step=cfg.batch_size * (train_windows.shape[1] - 1),
            log_every=log_every,
            announce=announce,
            total_steps=cfg.steps,
        )
        announce = False
        nnx.update((model, optimizer), state)
        if val_windows is None:
            continue
        final = stop == cfg.steps
        loss = evaluate_lm(model, val_windows if final else probe, cfg.batch_size)
        if not math.isfinite(loss):
            raise FloatingPointError(f"{phase}: validation loss is {loss} at step {stop}")
        if uniform_loss is not None and loss > uniform_loss - DIVERGED_MARGIN:
            raise DivergedError(
                f"{phase}: validation loss {loss:.4f} at step {stop} is within "
                f"{DIVERGED_MARGIN} nats of the uniform model's {uniform_loss:.4f}: the run "
                "diverged; lower the learning rate and start again with --force-new or a fresh "
                "--workdir"
            )
        history["step"].append(stop)
        history["val_loss"].append(loss)
        if curve is not None and is_writer():
            curve.write_text(json.dumps(history))
    return history
