"""One Adam loop for every model here: a jitted pure step over the module's nnx.Param state,
minibatches drawn inside the step with fold_in(key, step) (same seed, same run).

The data, the key, the learning rate and the loss's scalar hyperparameters are arguments of the
step, not values closed over: closed-over arrays are compiled into the program as constants (the
training crops: tens of MB, measured ~20 s of compilation per model), and a program that differs
only in its constants misses the persistent compilation cache on every seed and grid point."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


def fit(
    model: nnx.Module,
    loss_fn: Callable,
    data: dict,
    steps: int,
    batch_size: int,
    lr: float,
    key: jax.Array,
    log_every: int = 0,
    hyper: dict[str, float] | None = None,
) -> list[dict]:
    """Trains `model` in place. loss_fn(model, batch: dict of [b, ...], key, **hyper) -> (loss,
    aux dict); `data` holds arrays with a common first axis; `hyper` scalar hyperparameters,
    traced (one compilation serves every value). Returns aux (+ loss) every log_every steps."""
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    opt = optax.adam(lr).init(params)  # Adam's state does not depend on the learning rate
    arrays = {k: jnp.asarray(v) for k, v in data.items()}
    hyper = {k: jnp.float32(v) for k, v in (hyper or {}).items()}
    n = len(next(iter(arrays.values())))
    step = _step(graphdef, loss_fn, n, min(batch_size, n))
    history = []
    for i in range(steps):
        params, opt, aux = step(params, opt, rest, arrays, hyper, key, jnp.float32(lr), i)
        if log_every and ((i + 1) % log_every == 0 or i + 1 == steps):
            row = {k: float(v) for k, v in aux.items()}
            if not np.isfinite(row["loss"]):
                raise FloatingPointError(f"loss {row['loss']} at step {i + 1}: lower lr ({lr})")
            history.append({"step": i + 1, **row})
    nnx.update(model, params)
    return history


@functools.cache
def _step(graphdef, loss_fn: Callable, n: int, b: int):
    """One jitted step per (model structure, loss, data size, batch): a CE run and its
    continuation, or two models of one structure, share its compilation."""

    @jax.jit
    def step(params, opt, rest, arrays, hyper, key, lr, i):
        tx = optax.adam(lr)  # lr traced: CE and its continuation at lr / 2 share a compilation
        k = jax.random.fold_in(key, i)
        idx = jax.random.choice(k, n, (b,), replace=False)
        batch = {name: a[idx] for name, a in arrays.items()}

        def f(p):
            return loss_fn(nnx.merge(graphdef, p, rest), batch, jax.random.fold_in(k, 1), **hyper)

        (loss, aux), g = jax.value_and_grad(f, has_aux=True)(params)
        up, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, up), opt, {"loss": loss, **aux}

    return step
