"""Training (one jitted lax.scan per chunk of epochs) and batched inference for GraphNet."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.scale_continuous_gnn.data import Batch
from projects.scale_continuous_gnn.models import GraphNet
from shared.config import PositiveFloat, PositiveInt


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    width: PositiveInt = 32  # hidden width of every layer and of the head
    depth: PositiveInt = 3  # message-passing layers
    powers: PositiveInt = 2  # K: resolvent powers R^1..R^K per resolvent layer
    epochs: PositiveInt = 200  # passes over the training graphs
    batch_size: PositiveInt = 64  # padded graphs per step
    lr: PositiveFloat = 1e-3  # Adam learning rate
    epochs_per_call: PositiveInt = 20  # epochs per jitted scan (progress granularity)

    def __post_init__(self):
        for name in ("width", "depth", "powers", "epochs", "batch_size", "epochs_per_call"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name}={getattr(self, name)} must be >= 1")
        if not self.lr > 0:
            raise ValueError(f"train.lr={self.lr} must be positive")


@dataclasses.dataclass
class Trained:
    model: GraphNet
    y_mean: float  # the head predicts (y - y_mean) / y_std
    y_std: float
    losses: list[float]  # mean training loss per epoch (standardized MSE)


def _take(data: Batch, idx: jax.Array) -> Batch:
    return jax.tree.map(lambda a: a[idx], data)


@functools.lru_cache
def _adam(lr: float) -> optax.GradientTransformation:
    """One transformation object per learning rate: it is part of the optimizer's graphdef, a
    static argument of `_run_epochs`, so a fresh object per run would force a recompilation."""
    return optax.adam(lr)


def _loss(m: GraphNet, b: Batch) -> jax.Array:
    """MSE of the graph target (y [B]) or of the node targets (y [B, N], padded nodes masked)."""
    if b.y.ndim == 2:
        return jnp.sum(b.mask * (m.node_predict(b) - b.y) ** 2) / jnp.sum(b.mask)
    return jnp.mean((m(b) - b.y) ** 2)


def _target_stats(b: Batch) -> tuple[float, float]:
    """Mean and std of the targets (of the real nodes only, for node targets)."""
    y = b.y[b.mask] if b.y.ndim == 2 else b.y
    return float(y.mean()), float(y.std() + 1e-8)


@functools.partial(jax.jit, static_argnames=("graphdef", "batch_size"))
def _run_epochs(graphdef, state, data: Batch, key: jax.Array, epochs: jax.Array, batch_size: int):
    """Epochs `epochs` of shuffled minibatch Adam steps in one compiled scan. Everything that
    varies between runs (state, data, key, epoch ids) is an argument, so seeds and resolutions
    with the same shapes share one compilation (and the persistent compilation cache)."""
    n = data.y.shape[0]
    steps = n // batch_size

    def epoch(state, e):
        perm = jax.random.permutation(jax.random.fold_in(key, e), n)[: steps * batch_size]

        def step(state, idx):
            m, o = nnx.merge(graphdef, state)
            loss, grads = nnx.value_and_grad(_loss)(m, _take(data, idx))
            o.update(m, grads)
            return nnx.state((m, o)), loss

        state, losses = jax.lax.scan(step, state, perm.reshape(steps, batch_size))
        return state, losses.mean()

    return jax.lax.scan(epoch, state, epochs)


def fit(model: GraphNet, train: Batch, cfg: TrainConfig, key: jax.Array, name: str) -> Trained:
    """Adam on the MSE of the standardized target; batches reshuffled every epoch with
    fold_in(key, epoch). Raises on a non-finite loss, naming the model and the epoch."""
    bs = min(cfg.batch_size, len(train.y))
    y_mean, y_std = _target_stats(train)
    data = jax.tree.map(jnp.asarray, train.replace(y=(train.y - y_mean) / y_std))
    opt = nnx.Optimizer(model, _adam(cfg.lr), wrt=nnx.Param)
    graphdef, state = nnx.split((model, opt))
    losses: list[float] = []
    for start in range(0, cfg.epochs, cfg.epochs_per_call):
        stop = min(start + cfg.epochs_per_call, cfg.epochs)
        state, chunk = _run_epochs(graphdef, state, data, key, jnp.arange(start, stop), bs)
        chunk = np.asarray(chunk).tolist()
        if not np.all(np.isfinite(chunk)):
            bad = start + int(np.argmin(np.isfinite(chunk)))
            raise FloatingPointError(f"{name}: training loss is not finite at epoch {bad}")
        losses += chunk
    nnx.update((model, opt), state)
    return Trained(model, y_mean, y_std, losses)


@nnx.jit
def _forward(model: GraphNet, b: Batch) -> tuple[jax.Array, jax.Array]:
    phi = model.embed(b)
    return phi, model.head(phi)[..., 0]


def forward(model: GraphNet, data: Batch, chunk: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(G) [G, width], head output [G]) in chunks of a fixed size (the last one padded by
    repeating graph 0), so each node count compiles once."""
    g = len(data.y)
    chunk = min(chunk, g)  # one large graph must not be padded to a chunk of copies
    phis, outs = [], []
    for i in range(0, g, chunk):
        idx = np.arange(i, i + chunk)
        phi, out = _forward(model, _take(data, np.where(idx < g, idx, 0)))
        keep = int(min(chunk, g - i))
        phis.append(np.asarray(phi)[:keep])
        outs.append(np.asarray(out)[:keep])
    return np.concatenate(phis), np.concatenate(outs)


@nnx.jit
def _forward_nodes(model: GraphNet, b: Batch) -> jax.Array:
    return model.node_predict(b)


def predict_nodes(t: Trained, data: Batch, chunk: int = 8) -> np.ndarray:
    """Node predictions in target units: [G, N] (padded nodes included; mask them)."""
    outs = []
    for i in range(0, len(data.y), chunk):
        idx = np.arange(i, i + chunk)
        out = _forward_nodes(t.model, _take(data, np.where(idx < len(data.y), idx, 0)))
        outs.append(np.asarray(out)[: len(data.y) - i])
    return np.concatenate(outs) * t.y_std + t.y_mean


def embed(model: GraphNet, data: Batch) -> np.ndarray:
    """Phi(G) of every graph: [G, width]."""
    return forward(model, data)[0]


def predict(t: Trained, data: Batch) -> np.ndarray:
    """Predictions in target units: [G]."""
    return forward(t.model, data)[1] * t.y_std + t.y_mean
