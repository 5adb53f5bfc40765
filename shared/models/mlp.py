"""Multi-layer perceptron."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
from flax import nnx

from shared.models.layers import dropout, split_key


class MLP(nnx.Module):
    """in_dim -> hidden... -> out_dim, activation and dropout between layers (none at the end)."""

    def __init__(
        self,
        in_dim: int,
        hidden: Sequence[int],
        out_dim: int,
        *,
        rngs: nnx.Rngs,
        activation: Callable[[jax.Array], jax.Array] = nnx.relu,
        dropout_rate: float = 0.0,
    ):
        dims = [in_dim, *hidden, out_dim]
        self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(dims[:-1], dims[1:])])
        self.activation = activation
        self.dropout_rate = dropout_rate

    def __call__(self, x: jax.Array, *, key: jax.Array | None = None) -> jax.Array:
        keys = split_key(key, len(self.layers))
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = dropout(self.activation(x), self.dropout_rate, keys[i])
        return x
