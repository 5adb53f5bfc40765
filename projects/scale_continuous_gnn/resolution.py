"""Multi-resolution graph families: G_lambda and its coarse graph (numpy, float64).

A `Multiscale` graph holds fine edge weights split into between-cluster edges `w_inter` and
within-cluster edges `w_intra`, unit node weights and a cluster of each node. G_lambda has
W = w_inter + lambda * w_intra (the interpolating sequence); the coarse graph has one node per
cluster with mass mu_c = |c| and edge weights W_cd = sum_{i in c, j in d} W_ij (c != d).
Maps: lift J_up [n, n_c] (J_up[i, c] = 1 if i in c) and weighted average
J_down = M_c^-1 J_up^T M.

The node-weighted Laplacian and its resolvent are Reconstruction (the paper's exact form is not
public), following the resolvent-convergence result for tightly connected clusters: as lambda
grows, R_z(L_lambda) -> J_up R_z(L_coarse) J_down at rate 1/lambda.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from shared.graph import generators


@dataclasses.dataclass(frozen=True)
class Weighted:
    """One resolution: edge weights w [n, n], node weights mu [n], features x [n, F]."""

    w: np.ndarray
    mu: np.ndarray
    x: np.ndarray


@dataclasses.dataclass(frozen=True)
class Multiscale:
    w_inter: np.ndarray  # [n, n] between-cluster edge weights (zero inside clusters)
    w_intra: np.ndarray  # [n, n] within-cluster edge weights (scaled by lambda)
    cluster: np.ndarray  # [n] int in [0, n_c), every cluster connected by w_intra
    x: np.ndarray  # [n, F] fine node features

    def __post_init__(self):
        same = self.cluster[:, None] == self.cluster[None, :]
        if np.any(self.w_inter[same] != 0) or np.any(self.w_intra[~same] != 0):
            raise ValueError("w_inter must vanish inside clusters and w_intra between them")

    @property
    def num_clusters(self) -> int:
        return int(self.cluster.max()) + 1

    def lift(self) -> np.ndarray:
        """J_up [n, n_c]."""
        return np.eye(self.num_clusters)[self.cluster]

    def restrict(self) -> np.ndarray:
        """J_down = M_c^-1 J_up^T M [n_c, n] (fine node weights are 1)."""
        j = self.lift()
        return j.T / j.sum(0)[:, None]

    def fine(self, lam: float) -> Weighted:
        return Weighted(self.w_inter + lam * self.w_intra, np.ones(len(self.cluster)), self.x)

    def coarse(self) -> Weighted:
        j = self.lift()
        w = j.T @ self.w_inter @ j
        np.fill_diagonal(w, 0.0)
        mu = j.sum(0)
        return Weighted(w, mu, self.restrict() @ self.x)  # features: mu-weighted cluster mean


def from_edges(
    edges: np.ndarray, cluster: np.ndarray, x: np.ndarray, weights: np.ndarray | float = 1.0
) -> Multiscale:
    """Splits an edge list into between- and within-cluster weights."""
    w = generators.adjacency(edges, len(cluster), weights)
    same = cluster[:, None] == cluster[None, :]
    return Multiscale(np.where(same, 0.0, w), np.where(same, w, 0.0), cluster, x)


def laplacian(g: Weighted) -> np.ndarray:
    """Node-weighted Laplacian L = M^-1 (D - W) (Reconstruction). Self-adjoint in the
    M-inner product: M L = D - W is symmetric."""
    return (np.diag(g.w.sum(1)) - g.w) / g.mu[:, None]


def resolvent(g: Weighted, z: float = -1.0) -> np.ndarray:
    """R_z(L) = (L - z I)^-1 = (D - W - z M)^-1 M for z < 0 (an SPD solve in float64)."""
    if z >= 0:
        raise ValueError(f"z={z} must be negative: L - zI is invertible only for z off [0, inf)")
    a = np.diag(g.w.sum(1)) - g.w - z * np.diag(g.mu)
    return np.linalg.solve(a, np.diag(g.mu))


def molecule(mol: generators.MoleculeLike, num_types: int) -> Multiscale:
    """A molecule-like graph: heavy-heavy edges weight 1 (between clusters), heavy-leaf edges
    within the heavy node's cluster. Features: one-hot heavy type, or the extra 'H' slot."""
    edges = np.concatenate([mol.skeleton, mol.leaf_edges])
    x = np.zeros((mol.num_nodes, num_types + 1))
    x[np.arange(mol.num_heavy), mol.heavy_type] = 1.0
    x[mol.num_heavy :, num_types] = 1.0
    return from_edges(edges, mol.cluster, x)


def grid(rows: int, cols: int, x: np.ndarray, block: int = 2) -> Multiscale:
    """A rows x cols grid whose block x block squares are the clusters."""
    edges = generators.grid_2d(rows, cols)
    return from_edges(edges, generators.grid_block_clusters(rows, cols, block), x)
