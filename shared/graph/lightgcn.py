"""LightGCN propagation on a user–item bipartite graph (He et al., 2020).

Nodes are users `0..U-1` followed by items `U..U+I-1`. The adjacency is
`A = [[0, R], [Rᵀ, 0]]` without self-loops, normalized symmetrically
`Â = D^{-1/2} A D^{-1/2}` (isolated nodes get zero rows), and

    E^{(l+1)} = Â E^{(l)},  l = 0..L-1,      e = mean_l E^{(l)}   (layer-mean pooling)

There are no feature transforms and no nonlinearities. Propagation is a segment-sum over the
directed edge list (2·|R| entries): on CPU at a few thousand nodes this is far cheaper than a
dense `[N, N]` matmul, whose cost grows with N² rather than with the edge count.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class NormalizedEdges:
    """Â as a directed edge list over U + I nodes: `Â[dst, src] = weight`.

    src, dst: [2·E] int32; weight: [2·E] float32 = 1 / sqrt(deg(src) · deg(dst)).
    Edges are sorted by dst, so `segment_sum(..., indices_are_sorted=True)` applies."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    num_nodes: int


def normalized_edges(
    users: np.ndarray, items: np.ndarray, num_users: int, num_items: int
) -> NormalizedEdges:
    """Â of the interactions (users[k], items[k]); duplicate pairs count once."""
    users, items = np.asarray(users, np.int64), np.asarray(items, np.int64)
    if users.shape != items.shape or users.ndim != 1:
        raise ValueError(f"users {users.shape} and items {items.shape} must be equal 1-D shapes")
    if len(users) and (users.min() < 0 or users.max() >= num_users):
        raise ValueError(f"user ids must lie in [0, {num_users})")
    if len(items) and (items.min() < 0 or items.max() >= num_items):
        raise ValueError(f"item ids must lie in [0, {num_items})")
    pairs = np.unique(users * num_items + items)  # drop duplicates: A is 0/1
    u, i = pairs // num_items, pairs % num_items + num_users
    n = num_users + num_items
    deg = np.bincount(u, minlength=n) + np.bincount(i, minlength=n)
    src = np.concatenate([u, i])
    dst = np.concatenate([i, u])
    w = 1.0 / np.sqrt(deg[src] * deg[dst])  # both ends have degree >= 1 by construction
    order = np.argsort(dst, kind="stable")
    return NormalizedEdges(
        src=src[order].astype(np.int32),
        dst=dst[order].astype(np.int32),
        weight=w[order].astype(np.float32),
        num_nodes=n,
    )


def dense_adjacency(edges: NormalizedEdges) -> np.ndarray:
    """Â as a dense [N, N] float64 matrix (for tests and tiny graphs)."""
    a = np.zeros((edges.num_nodes, edges.num_nodes))
    np.add.at(a, (edges.dst, edges.src), edges.weight.astype(np.float64))
    return a


def propagate(
    ego: jax.Array, src: jax.Array, dst: jax.Array, weight: jax.Array, num_layers: int
) -> jax.Array:
    """Every layer's embeddings: [L+1, N, d] with layer 0 = ego ([N, d]).

    src/dst/weight: the arrays of a `NormalizedEdges` (as jax arrays, so they can be traced)."""
    layers = [ego]
    for _ in range(num_layers):
        msg = layers[-1][src] * weight[:, None]
        layers.append(
            jax.ops.segment_sum(msg, dst, num_segments=ego.shape[0], indices_are_sorted=True)
        )
    return jnp.stack(layers)


def lightgcn(
    ego: jax.Array, src: jax.Array, dst: jax.Array, weight: jax.Array, num_layers: int
) -> tuple[jax.Array, jax.Array]:
    """(pooled [N, d] = mean over layers 0..L, per-layer [L+1, N, d])."""
    layers = propagate(ego, src, dst, weight, num_layers)
    return layers.mean(0), layers
