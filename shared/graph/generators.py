"""Seeded graph generators (numpy): trees, rings with branches, molecule-like graphs with
leaf "hydrogens", 2-D grids with block clusters, Erdos-Renyi graphs.

Graphs are returned as undirected edge lists `[E, 2]` (each edge once, i < j) over nodes
0..n-1; `adjacency` turns an edge list into a symmetric weight matrix.
"""

from __future__ import annotations

import dataclasses

import numpy as np


def adjacency(edges: np.ndarray, n: int, weights: np.ndarray | float = 1.0) -> np.ndarray:
    """Symmetric [n, n] float64 weight matrix of an undirected edge list (no self loops)."""
    edges = np.asarray(edges, np.int64).reshape(-1, 2)
    if (edges[:, 0] == edges[:, 1]).any():
        raise ValueError("self loops are not allowed in an edge list")
    a = np.zeros((n, n))
    w = np.broadcast_to(np.asarray(weights, np.float64), (len(edges),))
    np.add.at(a, (edges[:, 0], edges[:, 1]), w)
    np.add.at(a, (edges[:, 1], edges[:, 0]), w)
    return a


def random_tree(n: int, rng: np.random.Generator) -> np.ndarray:
    """Random recursive tree: node i >= 1 attaches to a uniform node j < i. [n - 1, 2]."""
    if n < 1:
        raise ValueError(f"a tree needs n >= 1 nodes, got {n}")
    parents = [int(rng.integers(0, i)) for i in range(1, n)]
    return np.array([(p, i) for i, p in enumerate(parents, start=1)], np.int64).reshape(-1, 2)


def ring_with_branches(n: int, ring: int, rng: np.random.Generator) -> np.ndarray:
    """A cycle on nodes 0..ring-1, the other nodes attached as a random recursive forest."""
    if not 3 <= ring <= n:
        raise ValueError(f"ring size must be in [3, n={n}], got {ring}")
    cyc = [(i, (i + 1) % ring) for i in range(ring)]
    rest = [(int(rng.integers(0, i)), i) for i in range(ring, n)]
    return np.sort(np.array(cyc + rest, np.int64), axis=1)


@dataclasses.dataclass(frozen=True)
class MoleculeLike:
    """Heavy nodes 0..h-1 (a tree or ring-with-branches skeleton), then leaves; each leaf hangs
    on one heavy node. cluster[i] = the heavy node of i (itself for heavy nodes)."""

    skeleton: np.ndarray  # [E_h, 2] heavy-heavy edges
    leaf_edges: np.ndarray  # [n_leaves, 2] (heavy, leaf) edges
    cluster: np.ndarray  # [n] int
    heavy_type: np.ndarray  # [h] int in [0, num_types)

    @property
    def num_heavy(self) -> int:
        return len(self.heavy_type)

    @property
    def num_nodes(self) -> int:
        return len(self.cluster)


def molecule_like(
    rng: np.random.Generator,
    heavy_range: tuple[int, int] = (5, 15),
    leaves_range: tuple[int, int] = (1, 3),
    num_types: int = 4,
    ring_prob: float = 0.5,
) -> MoleculeLike:
    """A random molecule-like graph: h ~ U{heavy_range} heavy nodes forming a random tree or
    (with probability ring_prob) a ring of 3-6 with branches; each heavy node carries
    U{leaves_range} leaves (both ranges inclusive)."""
    h = int(rng.integers(heavy_range[0], heavy_range[1] + 1))
    if h >= 3 and rng.random() < ring_prob:
        skeleton = ring_with_branches(h, int(rng.integers(3, min(6, h) + 1)), rng)
    else:
        skeleton = random_tree(h, rng)
    counts = rng.integers(leaves_range[0], leaves_range[1] + 1, size=h)
    owner = np.repeat(np.arange(h), counts)
    leaves = np.arange(h, h + len(owner))
    return MoleculeLike(
        skeleton=skeleton,
        leaf_edges=np.stack([owner, leaves], 1).astype(np.int64).reshape(-1, 2),
        cluster=np.concatenate([np.arange(h), owner]).astype(np.int64),
        heavy_type=rng.integers(0, num_types, size=h),
    )


def grid_2d(rows: int, cols: int) -> np.ndarray:
    """4-neighbour grid, node (r, c) = r * cols + c. [E, 2]."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    right = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1)
    down = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], 1)
    return np.concatenate([right, down]).astype(np.int64)


def grid_block_clusters(rows: int, cols: int, block: int) -> np.ndarray:
    """Cluster of each grid node when block x block squares are merged: [rows * cols] int,
    cluster (r // block) * (cols // block) + c // block."""
    if rows % block or cols % block:
        raise ValueError(f"grid {rows}x{cols} is not divisible into {block}x{block} blocks")
    r, c = np.divmod(np.arange(rows * cols), cols)
    return (r // block) * (cols // block) + c // block


def erdos_renyi(n: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """G(n, p): every pair i < j an edge with probability p. [E, 2]."""
    i, j = np.triu_indices(n, 1)
    keep = rng.random(len(i)) < p
    return np.stack([i[keep], j[keep]], 1).astype(np.int64)
