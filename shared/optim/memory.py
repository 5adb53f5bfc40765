"""Exact parameter and optimizer-state bytes from pytrees (abstract shapes: nothing allocated).

`optimizer_memory(tx, params)` evaluates `tx.init` under `jax.eval_shape`, so a 7B parameter
set costs only shapes. Bytes are summed over every array leaf (step counters included, reported
apart so that tests can compare with closed forms).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import optax


@dataclasses.dataclass(frozen=True)
class Memory:
    param_bytes: int  # all parameter leaves
    state_bytes: int  # all optimizer-state leaves, counters included
    counter_bytes: int  # the part of state_bytes held in 0-d leaves (step counters, norms)

    @property
    def total_bytes(self) -> int:
        return self.param_bytes + self.state_bytes


def tree_bytes(tree: Any, *, scalars_only: bool = False) -> int:
    """Sum of size * itemsize over array-like leaves (arrays or ShapeDtypeStructs)."""
    total = 0
    for x in jax.tree.leaves(tree):
        if not hasattr(x, "shape"):
            continue
        if scalars_only and len(x.shape):
            continue
        n = 1
        for d in x.shape:
            n *= d
        total += n * jnp.dtype(x.dtype).itemsize
    return total


def abstract(params: Any, dtype: Any = None) -> Any:
    """Params as ShapeDtypeStructs, optionally recast (e.g. to bfloat16 as the paper's runs)."""
    return jax.tree.map(
        lambda x: jax.ShapeDtypeStruct(x.shape, jnp.dtype(dtype) if dtype else x.dtype), params
    )


def optimizer_memory(tx: optax.GradientTransformation, params: Any, dtype: Any = None) -> Memory:
    """Exact bytes of `params` and of `tx.init(params)` (abstract evaluation)."""
    p = abstract(params, dtype)
    state = jax.eval_shape(tx.init, p)
    return Memory(tree_bytes(p), tree_bytes(state), tree_bytes(state, scalars_only=True))
