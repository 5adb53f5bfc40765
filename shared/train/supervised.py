"""Supervised heads on fixed features: a linear model or an MLP trained with AdamW, minibatches,
and early stopping on a validation split (the best validation epoch's parameters are kept).

Used for linear probes and MLPs on frozen embeddings and for raw-feature MLP baselines.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Annotated

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from shared.config import NonNegativeFloat, PositiveFloat, PositiveInt, Range
from shared.models.mlp import MLP


@dataclasses.dataclass(frozen=True)
class HeadConfig:
    hidden: tuple[PositiveInt, ...] = ()  # () = linear model
    lr: PositiveFloat = 1e-3
    weight_decay: NonNegativeFloat = 2e-5
    dropout: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.0
    batch_size: PositiveInt = 256
    max_rounds: PositiveInt = 100
    patience: PositiveInt = 10  # validation rounds without improvement before stopping
    # A validation round is one epoch, or more passes when an epoch has fewer steps than this: a
    # 400-row split is one batch, and 100 single-step rounds leave even a linear head unfit.
    min_steps_per_round: PositiveInt = 50


def fit_head(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    *,
    num_outputs: int,
    regression: bool,
    cfg: HeadConfig,
    seed: int,
) -> Callable[[np.ndarray], np.ndarray]:
    """Trains on (x_train, y_train) [N, F]; returns predict(x) -> logits [N, C] or values [N].

    Classification minimizes softmax cross-entropy and selects by validation accuracy;
    regression minimizes squared error on targets standardized with the training split's mean
    and std (predictions are returned on the original scale) and selects by validation MSE.
    """
    key_init, key_data, key_drop = jax.random.split(jax.random.key(seed), 3)
    model = MLP(
        x_train.shape[1],
        cfg.hidden,
        num_outputs,
        rngs=nnx.Rngs(params=key_init),
        dropout_rate=cfg.dropout,
    )
    model_graphdef = nnx.graphdef(model)
    optimizer = nnx.Optimizer(
        model, optax.adamw(cfg.lr, weight_decay=cfg.weight_decay), wrt=nnx.Param
    )
    graphdef, state = nnx.split((model, optimizer))
    bs = min(cfg.batch_size, len(x_train))
    n_batches = len(x_train) // bs
    passes = max(1, -(-cfg.min_steps_per_round // n_batches))  # whole epochs per round (ceil)
    # Unscaled targets (diabetes: mean 152, std 77) would leave the output bias far from the mean
    # within the epochs a probe gets at lr 1e-3.
    if regression:
        y_mean, y_std = float(np.mean(y_train)), float(np.std(y_train)) or 1.0
        yt = jnp.asarray((y_train - y_mean) / y_std, jnp.float32)
    else:
        y_mean, y_std, yt = 0.0, 1.0, jnp.asarray(y_train)
    xt = jnp.asarray(x_train, jnp.float32)

    def forward(model, x, key=None):
        out = model(x, key=key)
        return out[:, 0] if regression else out

    def loss_fn(model, x, y, key):
        out = forward(model, x, key)
        if regression:
            return jnp.mean(jnp.square(out - y))
        return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(out, y))

    @jax.jit
    def run_round(state, round_i):
        """One validation round of AdamW steps on `state = nnx.state((model, optimizer))`."""
        key_round = jax.random.fold_in(key_data, round_i)
        idx = jnp.concatenate(
            [
                jax.random.permutation(jax.random.fold_in(key_round, k), len(xt))[: n_batches * bs]
                for k in range(passes)
            ]
        ).reshape(passes * n_batches, bs)

        def body(carry, batch_idx):
            state, i = carry
            model, optimizer = nnx.merge(graphdef, state)
            key = jax.random.fold_in(jax.random.fold_in(key_drop, round_i), i)
            grads = nnx.grad(loss_fn)(model, xt[batch_idx], yt[batch_idx], key)
            optimizer.update(model, grads)
            return (nnx.state((model, optimizer)), i + 1), None

        (state, _), _ = jax.lax.scan(body, (state, 0), idx)
        return state

    @jax.jit
    def predict_jit(params, x):
        return forward(nnx.merge(model_graphdef, params), x)

    def outputs(p, x: np.ndarray) -> np.ndarray:
        out = np.asarray(predict_jit(p, jnp.asarray(x, jnp.float32)))
        return out * y_std + y_mean if regression else out  # targets' original scale

    def score(p) -> float:
        out = outputs(p, x_val)
        if regression:
            return -float(np.mean((out - y_val) ** 2))
        return float(np.mean(out.argmax(1) == y_val))

    params = nnx.state(model)  # the model's own state (the first half of `state`)
    best, best_params, since = -np.inf, params, 0
    for r in range(cfg.max_rounds):
        state = run_round(state, r)
        params = state[0]
        s = score(params)
        if s > best:
            best, best_params, since = s, params, 0
        else:
            since += 1
            if since >= cfg.patience:
                break

    return lambda x: outputs(best_params, x)


def one_hot_features(
    x_num: np.ndarray, x_cat: np.ndarray, cardinalities: Sequence[int]
) -> np.ndarray:
    """Raw-feature design matrix: numerical columns, then one-hot categorical columns."""
    parts = [x_num] + [
        np.eye(c, dtype=np.float32)[x_cat[:, j]] for j, c in enumerate(cardinalities)
    ]
    return np.concatenate(parts, axis=1).astype(np.float32)
