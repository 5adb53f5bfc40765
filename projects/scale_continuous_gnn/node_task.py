"""Node regression on one large grid at two resolutions (spec §5, "larger graphs").

The graph is fixed: a side x side grid whose block x block squares are the clusters (32 x 32
fine nodes, a 16 x 16 coarse grid). An instance is a smooth random field on it (the small grids'
`smooth_fields`: 3 fields and a constant channel); instances differ only in the field, so the
split is over fields. Target (Reconstruction, the spec names only "a resolvent-filtered field"):

    y_c = tanh(v . (R_z(L_coarse) x_coarse)_c)  on each coarse node c,  y_i = y_c(i) on fine nodes,

the limit of the fine resolvent filter as lambda grows (R_z(L_lambda) -> J_up R_z(L_c) J_down), so
one target describes the field at both resolutions and a scale-continuous model can transfer.
The resolvent and the adjacency are the same for every instance; they are computed once per
resolution and copied into the padded batch.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from flax import nnx

from projects.scale_continuous_gnn import data as data_lib
from projects.scale_continuous_gnn import resolution, train
from projects.scale_continuous_gnn.models import GraphNet
from shared.config import Fraction, PositiveInt
from shared.rng import numpy_rng, stream


@dataclasses.dataclass(frozen=True)
class NodeConfig:
    side: PositiveInt = 32  # fine grid side (side x side nodes); even
    block: PositiveInt = 2  # cluster side: the coarse grid is (side / block)^2 nodes
    num_fields: PositiveInt = 3  # smooth fields per instance (plus a constant channel)
    num_instances: PositiveInt = 64  # fields drawn per seed, split train/val/test
    split: tuple[Fraction, Fraction] = (0.5, 0.25)  # train and validation fractions (rest: test)
    z: float = -1.0  # resolvent point (negative)
    v: tuple[float, ...] = (1.5, -1.0, 0.7, 0.2)  # target weights of the fields and the constant

    def __post_init__(self):
        if self.side % self.block:
            raise ValueError(f"side={self.side} must be a multiple of block={self.block}")
        if self.z >= 0:
            raise ValueError(f"z={self.z} must be negative (e.g. -1.0)")
        if len(self.v) != self.num_fields + 1:
            raise ValueError(f"v has {len(self.v)} entries; it needs num_fields + 1")
        if sum(self.split) >= 1.0:
            raise ValueError(f"split={self.split} leaves no test instances")


def draw(cfg: NodeConfig, seed: int) -> list[resolution.Multiscale]:
    """num_instances fields on the same grid (one Multiscale per field)."""
    rng = numpy_rng(seed, "data/grid_nodes")
    out = []
    for _ in range(cfg.num_instances):
        x = data_lib.smooth_fields(cfg.side, cfg.side, cfg.num_fields, rng)
        out.append(resolution.grid(cfg.side, cfg.side, x, cfg.block))
    return out


def coarse_target(g: resolution.Multiscale, cfg: NodeConfig) -> np.ndarray:
    """y on the coarse nodes: tanh(v . (R_z(L_c) x_c)), [n_c]."""
    c = g.coarse()
    return np.tanh(_coarse_resolvent(cfg.side, cfg.block, cfg.z) @ c.x @ np.asarray(cfg.v))


@functools.lru_cache(maxsize=2)
def _coarse_resolvent(side: int, block: int, z: float) -> np.ndarray:
    """R_z(L_c) of the coarse grid, solved once: every instance shares the graph."""
    g = resolution.grid(side, side, np.zeros((side * side, 1)), block)
    return resolution.resolvent(g.coarse(), z)


def batch(
    graphs: list[resolution.Multiscale],
    cfg: NodeConfig,
    which: str,
    lam: float,
    num_nodes: int,
    seed: int = 0,
) -> data_lib.Batch:
    """All instances at one resolution ('mixed': fine or coarse per instance, probability 1/2),
    padded to num_nodes; y [G, num_nodes] node targets (0 on padded nodes). One lam per batch."""
    pick = numpy_rng(seed, "mixed").random(len(graphs)) < 0.5
    fine_view = {"fine": [True] * len(graphs), "coarse": [False] * len(graphs), "mixed": pick}
    if which not in fine_view:
        raise ValueError(f"resolution {which!r}: choose fine, coarse or mixed")
    views, ys = [], np.zeros((len(graphs), num_nodes), np.float32)
    for k, (g, fine) in enumerate(zip(graphs, fine_view[which], strict=True)):
        y_c = coarse_target(g, cfg)
        views.append(g.fine(lam) if fine else g.coarse())
        y = y_c[g.cluster] if fine else y_c
        ys[k, : len(y)] = y
    return _stack_shared(views, ys, num_nodes, cfg.z)


def _stack_shared(views, y: np.ndarray, num_nodes: int, z: float) -> data_lib.Batch:
    """data.stack, but each distinct graph's resolvent is solved once (a 1,024-node dense solve
    per instance would dominate the run): graphs are keyed by their node count, which on one
    fixed grid identifies the resolution."""
    b, f = len(views), views[0].x.shape[1]
    adj = np.zeros((b, num_nodes, num_nodes), np.float32)
    res = np.zeros_like(adj)
    mask = np.zeros((b, num_nodes), bool)
    mu = np.ones((b, num_nodes), np.float32)
    x = np.zeros((b, num_nodes, f), np.float32)
    solved: dict[int, np.ndarray] = {}
    for k, g in enumerate(views):
        n = len(g.mu)
        if n not in solved:
            solved[n] = resolution.resolvent(g, z)
        adj[k, :n, :n], res[k, :n, :n] = g.w, solved[n]
        mask[k, :n], mu[k, :n], x[k, :n] = True, g.mu, g.x
    return data_lib.Batch(adj, mask, mu, x, res, y)


def node_mae(pred: np.ndarray, b: data_lib.Batch) -> float:
    """Mean |prediction − target| over the real nodes of every instance."""
    return float(np.abs(pred - b.y)[b.mask].mean())


def run(cfg: NodeConfig, models, tcfg, lam: float, train_on, seed: int, bar) -> dict[str, float]:
    """Trains every model on each resolution in `train_on` and tests it on fine and coarse.
    Metrics `grid_nodes/<model>/<train>_to_<test>` (test MAE), `val_...`, and the MAE of
    predicting the mean training target (`grid_nodes/train_mean/...`)."""

    graphs = draw(cfg, seed)
    idx = data_lib.split_indices(len(graphs), cfg.split, seed)
    part = {k: [graphs[i] for i in v] for k, v in idx.items()}
    n_f, n_c = cfg.side**2, (cfg.side // cfg.block) ** 2
    sizes = {"fine": n_f, "coarse": n_c, "mixed": n_f}
    batches = {
        (split, res): batch(part[split], cfg, res, lam, sizes[res], seed)
        for split in ("train", "val", "test")
        for res in ("fine", "coarse")
    }
    if "mixed" in train_on:
        batches[("train", "mixed")] = batch(part["train"], cfg, "mixed", lam, n_f, seed)
    out: dict[str, float] = {}
    y_mean = float(batches[("train", "coarse")].y.mean())  # coarse and fine means agree
    for res in train_on:
        for test in ("fine", "coarse"):
            b = batches[("test", test)]
            out[f"grid_nodes/train_mean/{res}_to_{test}"] = node_mae(np.full_like(b.y, y_mean), b)
    for name in models:
        for res in train_on:
            key = stream(seed, f"init/grid_nodes/{name}")  # same initialization per resolution
            model = GraphNet(
                name, cfg.num_fields + 1, tcfg.width, tcfg.depth, tcfg.powers, rngs=nnx.Rngs(key)
            )
            bar.set_description(f"grid_nodes/{name}/train on {res}")
            t = train.fit(
                model,
                batches[("train", res)],
                tcfg,
                stream(seed, f"data/grid_nodes/{name}/{res}"),
                f"grid_nodes/{name}/{res}",
            )
            for split in ("val", "test"):
                for test in ("fine", "coarse"):
                    b = batches[(split, test)]
                    prefix = "" if split == "test" else "val_"
                    mae = node_mae(train.predict_nodes(t, b), b)
                    out[f"grid_nodes/{name}/{prefix}{res}_to_{test}"] = mae
            out[f"grid_nodes/{name}/{res}_final_loss"] = t.losses[-1]
            bar.update()
    return out
