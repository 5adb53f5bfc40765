"""Synthetic multi-resolution datasets: molecule-like graphs and 2-D grids, each graph at its
fine resolution G_lambda and its coarse resolution, padded into dense arrays.

Target (both resolutions share it: it describes the object, not the resolution):
    y = tr R(L_c) + sum_c mu_c tanh(v . (R(L_c) x_c)),   R = R_{-1}, computed on the coarse graph.
Both terms are continuous in the resolution (tr R(L_lambda) -> tr R(L_c) and the mu-weighted sum
converges), so a scale-continuous model can fit one resolution and transfer to the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
from flax import struct

from projects.scale_continuous_gnn import resolution
from shared.config import Fraction, NonNegativeInt, PositiveInt, Range
from shared.graph import generators
from shared.graph.batching import DenseGraphs
from shared.rng import numpy_rng

# v of the target, fixed before any run: heavy types 0..3 then 'H' (molecules); the smooth
# fields then the constant channel (grids).
TARGET_V = {
    "molecules": np.array([1.0, -0.5, 0.8, -1.2, 0.3]),
    "grids": np.array([1.5, -1.0, 0.7, 0.2]),
}


@dataclasses.dataclass(frozen=True)
class DataConfig:
    family: Literal["molecules", "grids"] = "molecules"  # which graph family
    num_graphs: Annotated[int, Range(20)] = 2000  # graphs drawn per seed, split train/val/test
    split: tuple[Fraction, Fraction] = (0.8, 0.1)  # train and validation fractions (rest: test)
    heavy_range: tuple[PositiveInt, PositiveInt] = (5, 15)  # molecules: heavy nodes (inclusive)
    # molecules: leaves per heavy node (inclusive)
    leaves_range: tuple[NonNegativeInt, NonNegativeInt] = (1, 3)
    num_types: PositiveInt = 4  # molecules: heavy node types
    grid_sides: tuple[PositiveInt, ...] = (4, 6, 8)  # grids: rows and cols drawn from these (even)
    num_fields: PositiveInt = 3  # grids: smooth random fields per node (plus a constant channel)
    z: Annotated[float, Range(None, 0.0, high_open=True)] = -1.0  # resolvent point (negative)

    def __post_init__(self):
        if self.family not in TARGET_V:
            raise ValueError(f"data.family={self.family!r}: choose one of {list(TARGET_V)}")
        if self.num_graphs < 20:
            raise ValueError(f"data.num_graphs={self.num_graphs} is too small; use >= 20")
        if self.z >= 0:
            raise ValueError(f"data.z={self.z} must be negative (e.g. -1.0)")
        if any(s % 2 for s in self.grid_sides):
            raise ValueError(f"data.grid_sides={self.grid_sides} must be even (2x2 clusters)")
        if self.family == "grids" and self.num_fields + 1 != len(TARGET_V["grids"]):
            raise ValueError("data.num_fields must be 3 for grids (the target's v has 4 entries)")


@struct.dataclass
class Batch:
    """Graphs padded to N nodes. adj [B, N, N] edge weights; mask [B, N]; mu [B, N] node
    weights (1 on padded nodes); x [B, N, F]; res [B, N, N] resolvent R_z(L) (0 outside each
    graph's block); y [B] target."""

    adj: np.ndarray
    mask: np.ndarray
    mu: np.ndarray
    x: np.ndarray
    res: np.ndarray
    y: np.ndarray

    @property
    def graphs(self) -> DenseGraphs:
        return DenseGraphs(self.adj, self.mask)


def smooth_fields(rows: int, cols: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """k random low-frequency fields (3 cosines each) sampled at the cell centres of the unit
    square, plus a constant channel: [rows * cols, k + 1]."""
    r, c = np.divmod(np.arange(rows * cols), cols)
    p = np.stack([(r + 0.5) / rows, (c + 0.5) / cols], 1)
    freq = rng.uniform(-1.0, 1.0, (k, 3, 2))
    phase = rng.uniform(0, 2 * np.pi, (k, 3))
    amp = rng.normal(size=(k, 3)) / np.sqrt(3)
    wave = np.cos(2 * np.pi * np.einsum("nd,kmd->nkm", p, freq) + phase)  # [n, k, 3]
    f = np.einsum("km,nkm->nk", amp, wave)
    return np.concatenate([f, np.ones((rows * cols, 1))], 1)


def draw_graphs(cfg: DataConfig, seed: int) -> list[resolution.Multiscale]:
    rng = numpy_rng(seed, f"data/{cfg.family}")
    out = []
    for _ in range(cfg.num_graphs):
        if cfg.family == "molecules":
            mol = generators.molecule_like(rng, cfg.heavy_range, cfg.leaves_range, cfg.num_types)
            out.append(resolution.molecule(mol, cfg.num_types))
        else:
            rows, cols = (int(rng.choice(cfg.grid_sides)) for _ in range(2))
            x = smooth_fields(rows, cols, cfg.num_fields, rng)
            out.append(resolution.grid(rows, cols, x))
    return out


def target(g: resolution.Multiscale, family: str, z: float) -> float:
    c = g.coarse()
    r = resolution.resolvent(c, z)
    return float(np.trace(r) + c.mu @ np.tanh((r @ c.x) @ TARGET_V[family]))


def stack(graphs: Sequence[resolution.Weighted], y: np.ndarray, num_nodes: int, z: float) -> Batch:
    """Pads weighted graphs into one Batch (float32; resolvents solved in float64 first)."""
    b, f = len(graphs), graphs[0].x.shape[1]
    adj = np.zeros((b, num_nodes, num_nodes), np.float32)
    res = np.zeros_like(adj)
    mask = np.zeros((b, num_nodes), bool)
    mu = np.ones((b, num_nodes), np.float32)
    x = np.zeros((b, num_nodes, f), np.float32)
    for k, g in enumerate(graphs):
        n = len(g.mu)
        if n > num_nodes:
            raise ValueError(f"graph {k} has {n} nodes > num_nodes={num_nodes}")
        adj[k, :n, :n], res[k, :n, :n] = g.w, resolution.resolvent(g, z)
        mask[k, :n], mu[k, :n], x[k, :n] = True, g.mu, g.x
    return Batch(adj, mask, mu, x, res, np.asarray(y, np.float32))


def max_nodes(graphs: Sequence[resolution.Multiscale], coarse: bool) -> int:
    return max(g.num_clusters if coarse else len(g.cluster) for g in graphs)


def split_indices(n: int, split: tuple[float, float], seed: int) -> dict[str, np.ndarray]:
    perm = numpy_rng(seed, "split").permutation(n)
    a, b = int(split[0] * n), int((split[0] + split[1]) * n)
    return {"train": perm[:a], "val": perm[a:b], "test": perm[b:]}


def resolution_batch(
    graphs: Sequence[resolution.Multiscale],
    y: np.ndarray,
    which: Literal["fine", "coarse", "mixed"],
    lam: float,
    z: float,
    num_nodes: int,
    seed: int = 0,
) -> Batch:
    """All graphs at one resolution; 'mixed' draws fine or coarse per graph (probability 1/2,
    deterministic in the seed)."""
    if which == "mixed":
        pick = numpy_rng(seed, "mixed").random(len(graphs)) < 0.5
        views = [g.fine(lam) if p else g.coarse() for g, p in zip(graphs, pick, strict=True)]
    elif which in ("fine", "coarse"):
        views = [g.fine(lam) if which == "fine" else g.coarse() for g in graphs]
    else:
        raise ValueError(f"resolution {which!r}: choose fine, coarse or mixed")
    return stack(views, y, num_nodes, z)
