"""One Adam loop for every model here: a jitted pure step over the module's nnx.Param state,
minibatches drawn inside the step with fold_in(key, step) (same seed, same run)."""

from __future__ import annotations

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
) -> list[dict]:
    """Trains `model` in place. loss_fn(model, batch: dict of [b, ...], key) -> (loss, aux dict);
    `data` holds arrays with a common first axis. Returns aux (+ loss) every log_every steps."""
    graphdef, params, rest = nnx.split(model, nnx.Param, ...)
    tx = optax.adam(lr)
    opt = tx.init(params)
    arrays = {k: jnp.asarray(v) for k, v in data.items()}
    n = len(next(iter(arrays.values())))

    @jax.jit
    def step(params, opt, i):
        k = jax.random.fold_in(key, i)
        idx = jax.random.choice(k, n, (min(batch_size, n),), replace=False)
        batch = {name: a[idx] for name, a in arrays.items()}

        def f(p):
            return loss_fn(nnx.merge(graphdef, p, rest), batch, jax.random.fold_in(k, 1))

        (loss, aux), g = jax.value_and_grad(f, has_aux=True)(params)
        up, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, up), opt, {"loss": loss, **aux}

    history = []
    for i in range(steps):
        params, opt, aux = step(params, opt, i)
        if log_every and ((i + 1) % log_every == 0 or i + 1 == steps):
            row = {k: float(v) for k, v in aux.items()}
            if not np.isfinite(row["loss"]):
                raise FloatingPointError(f"loss {row['loss']} at step {i + 1}: lower lr ({lr})")
            history.append({"step": i + 1, **row})
    nnx.update(model, params)
    return history
