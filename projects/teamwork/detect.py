"""Training and scoring of the masked-reconstruction detectors, and the PCA baseline.

Score of step t (Reconstruction, not confirmed by the paper): for each mask type (span), the
shifted masks of `periods.score_masks` hide every (t, c) exactly once; the squared error at the
hidden entries is averaged over channels, then over mask types.
"""

from __future__ import annotations

import dataclasses
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.teamwork.model import Coupling, MaskedReconstructor, ModelConfig
from projects.teamwork.periods import score_masks, train_masks
from shared.config import Fraction, NonNegativeInt, PositiveFloat, PositiveInt
from shared.rng import numpy_rng
from shared.train.loop import train_loop
from shared.train.optimizers import warmup_cosine


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    steps: PositiveInt = 200  # optimizer steps
    batch_size: PositiveInt = 16  # windows per step
    lr: PositiveFloat = 1e-3  # Adam peak learning rate (cosine decay, 10% warmup)
    mask_ratio: Fraction = 0.25  # fraction of steps hidden per channel (spec's suggested 0.25)
    # steps between checkpoints (0: only at the end and on SIGTERM)
    checkpoint_every: NonNegativeInt = 0


class WindowBatches:
    """Random train windows with their period-aware masks; stateful for `train_loop`."""

    def __init__(self, train: np.ndarray, window: int, spans, cfg: TrainConfig, seed: int):
        self.train, self.window, self.spans, self.cfg, self.seed = train, window, spans, cfg, seed
        self.step = 0

    def __next__(self):
        rng = numpy_rng(self.seed, "batches", self.step)
        self.step += 1
        starts = rng.integers(0, len(self.train) - self.window + 1, self.cfg.batch_size)
        x = self.train[starts[:, None] + np.arange(self.window)]
        m = train_masks(rng, len(x), self.window, x.shape[2], self.spans, self.cfg.mask_ratio)
        return x, m

    def get_state(self) -> dict:
        return {"step": self.step}

    def set_state(self, state: dict) -> None:
        self.step = int(state["step"])


def train_detector(
    train: np.ndarray,
    is_dom: np.ndarray,
    spans: tuple[int, ...],
    window: int,
    coupling: Coupling,
    gate: bool,
    mcfg: ModelConfig,
    tcfg: TrainConfig,
    seed: int,
    metrics_path: pathlib.Path | None = None,
    name: str = "train",
    checkpoint_dir: pathlib.Path | None = None,
) -> MaskedReconstructor:
    """train: [T, C] normalized normal data -> a trained model (MSE on hidden entries).

    With `checkpoint_dir` (absolute) the run checkpoints there (every `tcfg.checkpoint_every`
    steps and at the end) and a second call resumes from it: a finished run trains no more."""
    model = MaskedReconstructor(
        mcfg, window, train.shape[1], coupling, gate, rngs=nnx.Rngs(params=seed)
    )
    tx = optax.adam(warmup_cosine(tcfg.lr, tcfg.steps, max(1, tcfg.steps // 10)))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    dom = jnp.asarray(is_dom)

    @jax.jit
    def step_fn(state, batch, step):
        model, optimizer = nnx.merge(graphdef, state)
        x, m = batch

        def loss_fn(model):
            rec = model(x, m, dom)
            return jnp.sum(jnp.where(m, (rec - x) ** 2, 0.0)) / jnp.maximum(m.sum(), 1)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), {"loss": loss}

    batches = WindowBatches(train, window, spans, tcfg, seed)
    state = train_loop(
        state=state,
        step_fn=step_fn,
        batches=batches,
        num_steps=tcfg.steps,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=tcfg.checkpoint_every,
        metrics_path=metrics_path,
        name=name,
        log_every=100,
    )
    nnx.update((model, optimizer), state)
    return model


def _windows(x: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """x: [T, C] -> non-overlapping windows [W, window, C] (the last one ends at T) and starts."""
    starts = np.arange(0, len(x) - window + 1, window)
    if starts[-1] + window < len(x):
        starts = np.append(starts, len(x) - window)
    return x[starts[:, None] + np.arange(window)], starts


def score_series(
    model: MaskedReconstructor,
    x: np.ndarray,
    is_dom: np.ndarray,
    spans: tuple[int, ...],
    window: int,
    ratio: float = 0.25,
) -> np.ndarray:
    """x: [T, C] normalized -> per-step score [T] (mean over mask types of the hidden-entry error
    averaged over channels)."""
    wins, starts = _windows(x, window)
    graphdef, params = nnx.split(model)
    dom = jnp.asarray(is_dom)

    @jax.jit
    def err(p, xb, mb):
        return (nnx.merge(graphdef, p)(xb, mb, dom) - xb) ** 2

    per_win = np.zeros(wins.shape[:2])
    for span in spans:
        masks = score_masks(window, x.shape[1], span, ratio)  # [S, window, C]
        e = np.zeros(wins.shape)
        for m in masks:
            mb = np.broadcast_to(m, wins.shape)
            e += np.where(mb, np.asarray(err(params, wins, mb)), 0.0)
        per_win += e.mean(-1) / len(spans)
    out = np.zeros(len(x))
    for w, s in zip(per_win, starts):  # a later (overlapping last) window overwrites: same model
        out[s : s + window] = w
    return out


def pca_scores(train: np.ndarray, x: np.ndarray, lag: int, var_kept: float) -> np.ndarray:
    """Classical baseline: PCA on flattened windows of `lag` steps (train only), keeping the
    components that explain `var_kept` of the variance; score of t = mean squared reconstruction
    error over the windows covering t. train, x: [T, C] normalized -> [T_x]."""
    view = np.lib.stride_tricks.sliding_window_view
    tr = view(train, lag, axis=0).reshape(len(train) - lag + 1, -1)
    mu = tr.mean(0)
    _, s, vt = np.linalg.svd(tr[:: max(1, len(tr) // 5000)] - mu, full_matrices=False)
    k = int(np.searchsorted(np.cumsum(s**2) / np.sum(s**2), var_kept) + 1)
    comp = vt[:k]
    z = view(x, lag, axis=0).reshape(len(x) - lag + 1, -1) - mu
    e = ((z - z @ comp.T @ comp) ** 2).reshape(len(z), x.shape[1], lag).mean(1)  # [W, lag]
    out, cnt = np.zeros(len(x)), np.zeros(len(x))
    for j in range(lag):
        out[j : j + len(z)] += e[:, j]
        cnt[j : j + len(z)] += 1
    return out / cnt
