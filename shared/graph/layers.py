"""Message-passing layers (Flax NNX) over `batching.DenseGraphs` or `batching.SparseGraphs`.

Each layer takes (graphs, h) with h: [..., nodes, F_in] and returns [..., nodes, F_out]; the
graph object supplies the aggregation, so the same parameters run on dense or sparse batches.
Defaults follow the reference implementations (PyTorch Geometric): GCN uses edge weights
(`GCNConv(edge_weight=...)`), GIN and GraphSAGE aggregate over the unweighted topology
(`GINConv` and `SAGEConv` take no edge weights).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from shared.graph.batching import DenseGraphs, SparseGraphs

Graphs = DenseGraphs | SparseGraphs


class GCNConv(nnx.Module):
    """Kipf & Welling: h' = D~^-1/2 (A + I) D~^-1/2 h W + b."""

    def __init__(self, din: int, dout: int, *, weighted: bool = True, rngs: nnx.Rngs):
        self.linear = nnx.Linear(din, dout, use_bias=False, rngs=rngs)
        self.bias = nnx.Param(jnp.zeros((dout,)))
        self.weighted = weighted

    def __call__(self, g: Graphs, h: jax.Array) -> jax.Array:
        return g.gcn_propagate(self.linear(h), self.weighted) + self.bias[...]


class GINConv(nnx.Module):
    """Xu et al.: h' = MLP((1 + eps) h + sum_{j in N(i)} h_j), MLP = Linear-ReLU-Linear;
    eps fixed at 0 (GIN-0) unless `learn_eps`."""

    def __init__(
        self,
        din: int,
        dout: int,
        *,
        weighted: bool = False,
        learn_eps: bool = False,
        rngs: nnx.Rngs,
    ):
        self.mlp_in = nnx.Linear(din, dout, rngs=rngs)
        self.mlp_out = nnx.Linear(dout, dout, rngs=rngs)
        self.eps = nnx.Param(jnp.zeros(())) if learn_eps else None
        self.weighted = weighted

    def __call__(self, g: Graphs, h: jax.Array) -> jax.Array:
        eps = 0.0 if self.eps is None else self.eps[...]
        z = (1.0 + eps) * h + g.sum_neighbors(h, self.weighted)
        return self.mlp_out(jax.nn.relu(self.mlp_in(z)))


class SAGEConv(nnx.Module):
    """Hamilton et al., mean aggregator: h' = W_self h + W_neigh mean_{j in N(i)} h_j + b."""

    def __init__(self, din: int, dout: int, *, weighted: bool = False, rngs: nnx.Rngs):
        self.lin_self = nnx.Linear(din, dout, use_bias=False, rngs=rngs)
        self.lin_neigh = nnx.Linear(din, dout, rngs=rngs)
        self.weighted = weighted

    def __call__(self, g: Graphs, h: jax.Array) -> jax.Array:
        return self.lin_self(h) + self.lin_neigh(g.mean_neighbors(h, self.weighted))


LAYERS = {"gcn": GCNConv, "gin": GINConv, "sage": SAGEConv}
