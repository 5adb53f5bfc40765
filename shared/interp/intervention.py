"""What `shared.interp.trace` may change in a forward pass, and builders of predefined attention.

Every field of an `Intervention` is optional; a field left None adds no operation to the traced
forward (the pytree structure is static under `jit`). Arrays indexed by layer cover all layers,
so sweeps over layers, heads and scales are `vmap`s of one compiled function; an entry that
changes nothing (a zero steering row, a False head mask) leaves that layer's numbers bit-identical.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class AttentionOverride:
    """Predefined attention probabilities for one layer.

    probs: [B|1, N|1, T, S] the replacement; where: [B|1, N|1, T, S] bool, the entries replaced
    (intersected with the model's causal/padding mask). keep_mass=False writes `probs` as given
    (rows of a full replacement must sum to 1 over the visible keys); keep_mass=True rescales the
    replaced entries of each row to the mass the model's own attention put on them, so the rest
    of the row is untouched and it still sums to 1 (e.g. text queries' attention to image keys)."""

    probs: jax.Array
    where: jax.Array
    keep_mass: bool = struct.field(pytree_node=False, default=False)


@struct.dataclass
class Intervention:
    """attention: {layer: AttentionOverride} (its keys are part of the compiled structure).
    head_mask [L, B|1, T|1, N] bool and head_values [L, B|1, T|1, N, H]: the heads' outputs
    before o_proj where the mask is True are replaced (zeros zero a head; another run's outputs
    patch it). steer [L, B|1, T|1, D]: added to the residual stream entering block l."""

    attention: dict[int, AttentionOverride] | None = None
    head_mask: jax.Array | None = None
    head_values: jax.Array | None = None
    steer: jax.Array | None = None

    def __post_init__(self):
        if (self.head_mask is None) != (self.head_values is None):
            raise ValueError("head_mask and head_values go together: give both or neither")


def causal_uniform_probs(t: int) -> jax.Array:
    """[1, 1, T, T] causal mean pooling: A'_ij = 1 / (i + 1) for j <= i, else 0."""
    rows = jnp.arange(t)
    causal = rows[None, :] <= rows[:, None]
    return (causal / (rows[:, None] + 1.0)).astype(jnp.float32)[None, None]


def causal_noise_probs(key: jax.Array, shape: tuple[int, ...], where=None) -> jax.Array:
    """Gaussian-noise attention: rownorm(where ⊙ exp(eps)), eps ~ N(0, 1), shape [..., T, S].

    `where` (broadcastable bool, default the causal triangle with S = T) marks the keys a row
    may see; a row that sees none is all zeros."""
    t, s = shape[-2:]
    if where is None:
        where = jnp.arange(s)[None, :] <= jnp.arange(t)[:, None]
    eps = jax.random.normal(key, shape, jnp.float32)
    logits = jnp.where(where, eps, -jnp.inf)
    any_key = jnp.any(jnp.broadcast_to(where, shape), axis=-1, keepdims=True)
    return jnp.where(any_key, jax.nn.softmax(logits, axis=-1), 0.0)


def steering(
    num_layers: int, layer: int | jax.Array, vector: jax.Array, alpha, at: jax.Array
) -> jax.Array:
    """[L, B|1, T, D] adding alpha * vector ([D] or [B, D]) to the residual stream entering
    block `layer` at the positions where `at` ([B|1, T], bool or weights) is set."""
    vector = jnp.asarray(vector, jnp.float32)
    vector = vector[None] if vector.ndim == 1 else vector  # [B|1, D]
    add = alpha * at.astype(jnp.float32)[..., None] * vector[:, None, :]  # [B|1, T, D]
    onehot = jnp.arange(num_layers) == layer
    return onehot[:, None, None, None] * add[None]


def head_patch(
    num_layers: int, num_heads: int, layer, head, values: jax.Array, at: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """(head_mask, head_values) replacing head (layer, head) by `values` ([B|1, T|1, H]) at the
    positions `at` ([B|1, T] bool); `layer` and `head` may be traced (vmap over heads)."""
    one = (jnp.arange(num_layers)[:, None] == layer) & (jnp.arange(num_heads)[None, :] == head)
    mask = one[:, None, None, :] & at[None, :, :, None]  # [L, B|1, T, N]
    vals = jnp.broadcast_to(
        values[None, :, :, None, :], (1, *values.shape[:2], num_heads, values.shape[-1])
    )
    return mask, jnp.broadcast_to(vals, (num_layers, *vals.shape[1:]))
