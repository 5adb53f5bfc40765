"""attn_qat's training phases (pretraining or QAT finetuning) through the shared LM trainer, and
the stability statistics of their per-step global gradient norms.

`shared.train.lm.train_lm` runs the phase (the shared loop: checkpoints under
checkpoints/<phase>, resume, NaN stop, progress bar); this module gives it the phase's optimizer
(clip, then AdamW without decay on 1-D tensors, on the shared warm-up + cosine schedule), asks
for the gradient norm of every step (`log_every=1`, so `metrics.jsonl` holds the exact per-step
norms) and reads them back.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Literal

import numpy as np
import optax
from flax import nnx
from jax.sharding import Mesh

from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.train.lm import LMTrainConfig, global_grad_norm, train_lm
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine


@dataclasses.dataclass(frozen=True)
class PhaseConfig:
    steps: NonNegativeInt = 0  # optimizer steps (0: skip the phase)
    batch_size: PositiveInt = 8  # windows per step
    lr: PositiveFloat = 1e-4  # peak learning rate
    # linear warm-up steps (at least 1 is used: step 0 runs at lr 0)
    warmup_steps: NonNegativeInt = 0
    schedule: Literal["cosine", "constant"] = "constant"  # after warm-up: cosine to 0 or flat
    weight_decay: NonNegativeFloat = 0.01  # AdamW decay on matrices (never on 1-D gains)
    # global-norm clip of the update (the norm is logged before it)
    grad_clip: NonNegativeFloat = 1.0
    # steps between checkpoints inside the phase (0: only at its end), when checkpoints are on
    checkpoint_every: NonNegativeInt = 100

    def validate(self, name: str) -> None:
        if self.steps < 0 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError(f"{name}: steps >= 0, batch_size >= 1 and lr > 0 are required")
        if self.warmup_steps > self.steps:
            raise ValueError(f"{name}.warmup_steps={self.warmup_steps} exceeds steps={self.steps}")
        if self.grad_clip < 0:
            raise ValueError(f"{name}.grad_clip={self.grad_clip}: 0 (no clipping) or positive")


def schedule(cfg: PhaseConfig) -> optax.Schedule:
    """The shared warm-up + cosine: to 0 at `steps` ("cosine") or held at `lr` ("constant" =
    end_ratio 1.0). The warm-up lasts at least one step (step 0 at lr 0), as it always has here."""
    end_ratio = 0.0 if cfg.schedule == "cosine" else 1.0
    return warmup_cosine(cfg.lr, cfg.steps, max(cfg.warmup_steps, 1), end_ratio)


def optimizer(cfg: PhaseConfig) -> optax.GradientTransformation:
    return adamw_no_decay_on_vectors(schedule(cfg), cfg.weight_decay, grad_clip=cfg.grad_clip)


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
    """Trains `model` in place on windows [n, L + 1]; returns the per-step gradient norms.

    The phase `name` resumes from workdir/checkpoints/<name> (when `checkpoints`)."""
    if cfg.steps == 0:
        return np.zeros((0,))
    lm_cfg = LMTrainConfig(  # its optimizer fields mirror `optimizer(cfg)`, passed as `tx`
        steps=cfg.steps,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        grad_clip=cfg.grad_clip,
        seed=seed,
    )
    train_lm(
        model, windows, None, lm_cfg, tx=optimizer(cfg), workdir=workdir, phase=name,
        checkpoints=checkpoints, grad_metrics=global_grad_norm, log_every=1, mesh=mesh,
        checkpoint_every=cfg.checkpoint_every,
    )  # fmt: skip
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
