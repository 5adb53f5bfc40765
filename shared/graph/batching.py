"""Graph batches with one interface, two layouts.

`DenseGraphs` pads every graph of a batch to `N` nodes and stores its weighted adjacency
`adj[b, i, j]` (the weight of edge j -> i); best for many small graphs (molecules, <= ~200 nodes),
where a batched matmul beats gathers. `SparseGraphs` concatenates the graphs of a batch into one
edge list (jraph style) and aggregates with `jax.ops.segment_sum`; memory grows with the edges,
not with N^2, so it suits large sparse graphs. Both expose the same aggregations, so a layer
written against them runs on either (tests check that the two agree).

Padding: padded nodes have `mask` False, no edges and are excluded from every readout; padded
edges of a sparse batch have weight 0 and `edge_mask` False.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct


@struct.dataclass
class DenseGraphs:
    """A batch of B graphs padded to N nodes.

    adj: [B, N, N] symmetric non-negative edge weights (adj[b, i, j] = weight of edge j -> i),
    zero diagonal; mask: [B, N] bool, True on real nodes.
    """

    adj: jax.Array
    mask: jax.Array

    def _topology(self, weighted: bool) -> jax.Array:
        return self.adj if weighted else (self.adj > 0).astype(self.adj.dtype)

    def sum_neighbors(self, h: jax.Array, weighted: bool = True) -> jax.Array:
        """sum_j a_ij h_j: [B, N, F] -> [B, N, F]."""
        return jnp.einsum("bij,bjf->bif", self._topology(weighted), h)

    def degree(self, weighted: bool = True) -> jax.Array:
        """[B, N]: sum_j a_ij (weighted) or the neighbour count."""
        return self._topology(weighted).sum(-1)

    def mean_neighbors(self, h: jax.Array, weighted: bool = False) -> jax.Array:
        """sum_j a_ij h_j / sum_j a_ij; 0 for isolated nodes (as PyG's mean aggregation)."""
        deg = self.degree(weighted)[..., None]
        return self.sum_neighbors(h, weighted) / jnp.where(deg > 0, deg, 1.0)

    def gcn_propagate(self, h: jax.Array, weighted: bool = True) -> jax.Array:
        """D~^-1/2 (A + I) D~^-1/2 h with D~ = diag((A + I) 1) (Kipf & Welling; PyG GCNConv
        with self-loop weight 1). Padded nodes get a self loop too, so nothing divides by 0."""
        deg = self.degree(weighted) + 1.0
        s = jax.lax.rsqrt(deg)[..., None]
        return s * (self.sum_neighbors(s * h, weighted) + s * h)

    def readout_sum(self, h: jax.Array, node_weight: jax.Array | None = None) -> jax.Array:
        """sum_i w_i h_i over real nodes (w = 1 unless given): [B, N, F] -> [B, F]."""
        w = self.mask.astype(h.dtype) if node_weight is None else node_weight * self.mask
        return jnp.einsum("bn,bnf->bf", w, h)

    def readout_mean(self, h: jax.Array) -> jax.Array:
        """Mean over real nodes: [B, N, F] -> [B, F]."""
        n = self.mask.sum(-1, keepdims=True).astype(h.dtype)
        return self.readout_sum(h) / jnp.maximum(n, 1.0)


@struct.dataclass
class SparseGraphs:
    """A batch of graphs as one edge list over the concatenated nodes (V nodes, E edges).

    senders, receivers: [E] int32 (a message flows sender -> receiver; store both directions
    of an undirected edge); weights: [E]; edge_mask: [E] bool; graph: [V] int32, the graph of
    each node (padded nodes belong to the last, padding graph); mask: [V] bool; num_graphs:
    static number of graph slots G (the real graphs, then one padding slot).
    """

    senders: jax.Array
    receivers: jax.Array
    weights: jax.Array
    edge_mask: jax.Array
    graph: jax.Array
    mask: jax.Array
    num_graphs: int = struct.field(pytree_node=False)

    def _edge_weight(self, weighted: bool) -> jax.Array:
        w = self.weights if weighted else jnp.ones_like(self.weights)
        return jnp.where(self.edge_mask, w, 0.0)

    def sum_neighbors(self, h: jax.Array, weighted: bool = True) -> jax.Array:
        """[V, F] -> [V, F] by segment sum over receivers."""
        msg = h[self.senders] * self._edge_weight(weighted)[:, None]
        return jax.ops.segment_sum(msg, self.receivers, num_segments=h.shape[0])

    def degree(self, weighted: bool = True) -> jax.Array:
        return jax.ops.segment_sum(
            self._edge_weight(weighted), self.receivers, num_segments=self.mask.shape[0]
        )

    def mean_neighbors(self, h: jax.Array, weighted: bool = False) -> jax.Array:
        deg = self.degree(weighted)[:, None]
        return self.sum_neighbors(h, weighted) / jnp.where(deg > 0, deg, 1.0)

    def gcn_propagate(self, h: jax.Array, weighted: bool = True) -> jax.Array:
        s = jax.lax.rsqrt(self.degree(weighted) + 1.0)[:, None]
        return s * (self.sum_neighbors(s * h, weighted) + s * h)

    def readout_sum(self, h: jax.Array, node_weight: jax.Array | None = None) -> jax.Array:
        """[V, F] -> [G, F]; the padding slot (last row) stays 0."""
        w = self.mask.astype(h.dtype) if node_weight is None else node_weight * self.mask
        return jax.ops.segment_sum(w[:, None] * h, self.graph, num_segments=self.num_graphs)

    def readout_mean(self, h: jax.Array) -> jax.Array:
        n = jax.ops.segment_sum(self.mask.astype(h.dtype), self.graph, self.num_graphs)
        return self.readout_sum(h) / jnp.maximum(n, 1.0)[:, None]


def pad_dense(
    adjs: Sequence[np.ndarray], feats: Sequence[np.ndarray], num_nodes: int | None = None
) -> tuple[DenseGraphs, np.ndarray]:
    """Stacks graphs (adjacency [n, n], features [n, F]) into a DenseGraphs and features
    [B, N, F], padded to `num_nodes` (default: the largest graph)."""
    sizes = [a.shape[0] for a in adjs]
    n_max = max(sizes) if num_nodes is None else num_nodes
    if max(sizes) > n_max:
        raise ValueError(f"a graph has {max(sizes)} nodes > num_nodes={n_max}; raise num_nodes")
    b, f = len(adjs), feats[0].shape[1]
    adj = np.zeros((b, n_max, n_max), np.float32)
    x = np.zeros((b, n_max, f), np.float32)
    mask = np.zeros((b, n_max), bool)
    for k, (a, xk) in enumerate(zip(adjs, feats, strict=True)):
        n = a.shape[0]
        if a.shape != (n, n) or xk.shape != (n, f):
            raise ValueError(f"graph {k}: adjacency {a.shape} and features {xk.shape} disagree")
        adj[k, :n, :n], x[k, :n], mask[k, :n] = a, xk, True
    return DenseGraphs(jnp.asarray(adj), jnp.asarray(mask)), x


def batch_sparse(
    adjs: Sequence[np.ndarray],
    feats: Sequence[np.ndarray],
    num_nodes: int | None = None,
    num_edges: int | None = None,
) -> tuple[SparseGraphs, np.ndarray]:
    """Concatenates graphs into one SparseGraphs (edges read from the non-zeros of each
    adjacency) and features [V, F]; pads to `num_nodes` / `num_edges` (fixed shapes keep one
    compiled step across batches). There is always at least one padding node, which holds the
    padding edges and forms the padding graph slot."""
    sizes = [a.shape[0] for a in adjs]
    snd, rcv, wts, gid = [], [], [], []
    offset = 0
    for k, a in enumerate(adjs):
        r, s = np.nonzero(a)  # a[r, s] = weight of edge s -> r
        snd.append(s + offset)
        rcv.append(r + offset)
        wts.append(a[r, s])
        gid.append(np.full(a.shape[0], k))
        offset += a.shape[0]
    v_real, e_real = offset, sum(len(s) for s in snd)
    v = v_real + 1 if num_nodes is None else num_nodes
    e = e_real if num_edges is None else num_edges
    if v <= v_real or e < e_real:
        raise ValueError(
            f"the batch has {v_real} nodes and {e_real} edges; num_nodes must exceed the nodes "
            f"(>= {v_real + 1}) and num_edges must be >= {e_real}"
        )
    pad_e, pad_v = e - e_real, v - v_real
    x = np.zeros((v, feats[0].shape[1]), np.float32)
    x[:v_real] = np.concatenate(feats)
    g = SparseGraphs(
        senders=jnp.asarray(np.concatenate([*snd, np.full(pad_e, v_real)]), jnp.int32),
        receivers=jnp.asarray(np.concatenate([*rcv, np.full(pad_e, v_real)]), jnp.int32),
        weights=jnp.asarray(np.concatenate([*wts, np.zeros(pad_e)]), jnp.float32),
        edge_mask=jnp.asarray(np.arange(e) < e_real),
        graph=jnp.asarray(np.concatenate([*gid, np.full(pad_v, len(adjs))]), jnp.int32),
        mask=jnp.asarray(np.arange(v) < v_real),
        num_graphs=len(adjs) + 1,
    )
    assert sum(sizes) == v_real
    return g, x
