"""The compared models: standard message passing (GCN, GIN, GraphSAGE-mean from shared/graph)
with sum or mean readout, and the scale-continuous resolvent model (Reconstruction).

Every model maps a `data.Batch` to a graph embedding Phi(G) = readout(h^L) [B, width]
(`embed`) and a scalar prediction head(Phi(G)) [B] (`__call__`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import nnx

from projects.scale_continuous_gnn.data import Batch
from shared.graph.layers import LAYERS
from shared.models.mlp import MLP


@dataclasses.dataclass(frozen=True)
class Spec:
    layer: str  # "gcn" | "gin" | "sage" | "resolvent"
    readout: str  # "sum" | "mean" | "weighted" (sum_i mu_i h_i)
    identity_term: bool = False  # resolvent only: add the k = 0 term (ablation)
    label: str = ""


MODELS = {
    "gcn": Spec("gcn", "sum", label="GCN (sum readout)"),
    "gin": Spec("gin", "sum", label="GIN (sum readout)"),
    "sage": Spec("sage", "sum", label="GraphSAGE-mean (sum readout)"),
    "gcn_mean": Spec("gcn", "mean", label="GCN (mean readout)"),
    "gin_mean": Spec("gin", "mean", label="GIN (mean readout)"),
    "sage_mean": Spec("sage", "mean", label="GraphSAGE-mean (mean readout)"),
    "resolvent": Spec("resolvent", "weighted", label="Resolvent (scale-continuous)"),
    "resolvent_sum": Spec("resolvent", "sum", label="Resolvent, unweighted sum readout"),
    "resolvent_k0": Spec("resolvent", "weighted", True, label="Resolvent + identity (k=0) term"),
}


class ResolventConv(nnx.Module):
    """h' = sum_{k=1..K} R^k h Theta_k + 1 b^T (Reconstruction, see README): R = R_z(L) with
    the node-weighted Laplacian L = M^-1 (D - W). No k = 0 term unless `identity_term`: h Theta_0
    is not continuous across resolutions for features that vary inside a cluster."""

    def __init__(self, din: int, dout: int, powers: int, identity_term: bool, *, rngs: nnx.Rngs):
        first = 0 if identity_term else 1
        self.thetas = nnx.List(
            [nnx.Linear(din, dout, use_bias=False, rngs=rngs) for _ in range(first, powers + 1)]
        )
        self.bias = nnx.Param(jnp.zeros((dout,)))
        self.first = first

    def __call__(self, res: jax.Array, h: jax.Array) -> jax.Array:
        """res: [B, N, N], h: [B, N, F] -> [B, N, dout]."""
        out, p = self.bias[...], h
        for k, theta in enumerate(self.thetas, start=self.first):
            if k > 0:
                p = jnp.einsum("bij,bjf->bif", res, p)
            out = out + theta(p)
        return out


class GraphNet(nnx.Module):
    def __init__(self, name: str, din: int, width: int, depth: int, powers: int, *, rngs: nnx.Rngs):
        if name not in MODELS:
            raise ValueError(f"model {name!r} unknown; choose from {list(MODELS)}")
        self.spec = MODELS[name]
        dims = [din] + [width] * depth
        if self.spec.layer == "resolvent":
            convs = [
                ResolventConv(a, b, powers, self.spec.identity_term, rngs=rngs)
                for a, b in zip(dims[:-1], dims[1:])
            ]
        else:
            layer = LAYERS[self.spec.layer]
            convs = [layer(a, b, rngs=rngs) for a, b in zip(dims[:-1], dims[1:])]
        self.convs = nnx.List(convs)
        self.head = MLP(width, (width,), 1, rngs=rngs)

    def node_embed(self, b: Batch) -> jax.Array:
        """h^L, the node embeddings before the readout: [B, N, width]."""
        g, h = b.graphs, b.x
        for conv in self.convs:
            h = jax.nn.relu(conv(b.res, h) if self.spec.layer == "resolvent" else conv(g, h))
        return h

    def embed(self, b: Batch) -> jax.Array:
        """Phi(G): [B, width]."""
        g, h = b.graphs, self.node_embed(b)
        if self.spec.readout == "mean":
            return g.readout_mean(h)
        return g.readout_sum(h, b.mu if self.spec.readout == "weighted" else None)

    def node_predict(self, b: Batch) -> jax.Array:
        """Node regression: the head on every node's h^L, [B, N] (no readout)."""
        return self.head(self.node_embed(b))[..., 0]

    def __call__(self, b: Batch) -> jax.Array:
        return self.head(self.embed(b))[..., 0]
