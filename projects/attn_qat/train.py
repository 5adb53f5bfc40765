"""One training phase (pretraining or QAT finetuning) with the global gradient norm of every
step recorded, and the stability statistics computed from it.

The loop is the shared one (`shared.train.loop.train_loop`: checkpoints, resume, NaN stop,
progress bar); this module adds the step (loss, gradient norm, clipped AdamW update) and logs
every step (`log_every=1`) so `metrics.jsonl` holds the exact per-step gradient norms.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Literal

import jax
import numpy as np
import optax
from flax import nnx
from jax.sharding import Mesh

from shared.data.lm_pipeline import lm_batches
from shared.distributed import batch_sharded
from shared.train.checkpoint import Checkpointer
from shared.train.lm import window_loss
from shared.train.loop import train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors


@dataclasses.dataclass(frozen=True)
class PhaseConfig:
    steps: int = 0  # optimizer steps (0: skip the phase)
    batch_size: int = 8  # windows per step
    lr: float = 1e-4  # peak learning rate
    warmup_steps: int = 0  # linear warm-up steps
    schedule: Literal["cosine", "constant"] = "constant"  # after warm-up: cosine to 0 or flat
    weight_decay: float = 0.01  # AdamW decay on matrices (never on 1-D gains)
    grad_clip: float = 1.0  # global-norm clip of the update (the norm is logged before it)

    def validate(self, name: str) -> None:
        if self.steps < 0 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError(f"{name}: steps >= 0, batch_size >= 1 and lr > 0 are required")
        if self.warmup_steps > self.steps:
            raise ValueError(f"{name}.warmup_steps={self.warmup_steps} exceeds steps={self.steps}")


def optimizer(cfg: PhaseConfig) -> optax.GradientTransformation:
    warm = max(cfg.warmup_steps, 1)
    if cfg.schedule == "cosine":
        lr = optax.warmup_cosine_decay_schedule(0.0, cfg.lr, warm, max(cfg.steps, warm + 1))
    else:
        lr = optax.join_schedules(
            [optax.linear_schedule(0.0, cfg.lr, warm), optax.constant_schedule(cfg.lr)], [warm]
        )
    clip = optax.clip_by_global_norm(cfg.grad_clip) if cfg.grad_clip > 0 else optax.identity()
    return optax.chain(clip, adamw_no_decay_on_vectors(lr, cfg.weight_decay))


def train_phase(
    model: nnx.Module,
    windows: np.ndarray,
    cfg: PhaseConfig,
    *,
    seed: int,
    name: str,
    workdir: pathlib.Path,
    checkpoints: bool,
    mesh: Mesh | None = None,
) -> np.ndarray:
    """Trains `model` in place on windows [n, L + 1]; returns the per-step gradient norms."""
    if cfg.steps == 0:
        return np.zeros((0,))
    opt = nnx.Optimizer(model, optimizer(cfg), wrt=nnx.Param)
    graphdef, state = nnx.split((model, opt))
    place = (
        (lambda b: b)
        if mesh is None
        else (lambda b: jax.lax.with_sharding_constraint(b, batch_sharded(mesh)))
    )

    @jax.jit
    def step_fn(state, batch, step):
        m, o = nnx.merge(graphdef, state)
        loss, grads = nnx.value_and_grad(window_loss)(m, place(batch["tokens"]))
        norm = optax.global_norm(grads)
        o.update(m, grads)
        return nnx.state((m, o)), {"loss": loss, "grad_norm": norm}

    ckpt = Checkpointer(workdir / "checkpoints" / name) if checkpoints else None
    state = train_loop(
        state=state,
        step_fn=step_fn,
        batches=lm_batches(windows, cfg.batch_size, seed),
        num_steps=cfg.steps,
        checkpointer=ckpt,
        metrics_path=workdir / "metrics.jsonl",
        name=name,
        items_per_step=cfg.batch_size * (windows.shape[1] - 1),
        log_every=1,
    )
    if ckpt is not None:
        ckpt.close()
    nnx.update((model, opt), state)
    return grad_norms(workdir / "metrics.jsonl", name, cfg.steps)


def grad_norms(metrics: pathlib.Path, name: str, steps: int) -> np.ndarray:
    """The per-step gradient norms of phase `name` from metrics.jsonl (a resumed run may have
    logged a step twice: the last record of a step wins)."""
    by_step: dict[int, float] = {}
    for line in metrics.read_text().splitlines():
        r = json.loads(line)
        if r.get("phase") == name and "grad_norm" in r:
            by_step[r["step"]] = r["grad_norm"]
    missing = sorted(set(range(1, steps + 1)) - set(by_step))
    if missing:
        # A phase restored from its final checkpoint by a fresh process without the old log.
        raise FileNotFoundError(f"{metrics}: no gradient norm for steps {missing[:5]} of {name}")
    return np.asarray([by_step[s] for s in range(1, steps + 1)])


def spike_count(norms: np.ndarray, factor: float = 3.0, window: int = 50) -> int:
    """Steps whose norm exceeds `factor` x the median of the previous `window` steps' norms.

    Reconstruction: the "running median" is a trailing window of 50 earlier steps (the first
    step has no history and never counts); an expanding median was the alternative considered.
    """
    count = 0
    for t in range(1, len(norms)):
        if norms[t] > factor * np.median(norms[max(0, t - window) : t]):
            count += 1
    return count


def stability(norms: np.ndarray, prefix: str) -> dict[str, float]:
    """Gradient-norm mean, max, spike count, and mean over the phase's last quarter."""
    if len(norms) == 0:
        return {}
    tail = norms[len(norms) * 3 // 4 :]
    return {
        f"{prefix}/gnorm_mean": float(np.mean(norms)),
        f"{prefix}/gnorm_last_quarter": float(np.mean(tail)),
        f"{prefix}/gnorm_max": float(np.max(norms)),
        f"{prefix}/gnorm_spikes": float(spike_count(norms)),
    }
