"""Scale-continuous GNNs ("Graph Neural Networks Are Not Continuous Across Graph Resolutions").

    python launch/run.py projects/scale_continuous_gnn                 # cpu config, one seed
    python launch/run.py projects/scale_continuous_gnn --config smoke  # seconds, for tests
    python launch/reproduce.py projects/scale_continuous_gnn           # tables + figure, 3 seeds

One run (one seed) per graph family: draws the graphs, then for every model measures the
embedding gap ||Phi(G_lambda) - Phi(G_coarse)|| / ||Phi(G_coarse)|| over a lambda grid at
initialization, trains it on each resolution (fine at lambda = cfg.lam, coarse, mixed) and
tests it on both; the models trained on `gap_trained_on` get the gap curve again.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib

import jax
import numpy as np
from flax import nnx
from tqdm import tqdm

from projects.scale_continuous_gnn import data as data_lib
from projects.scale_continuous_gnn import node_task, resolution, train
from projects.scale_continuous_gnn.models import MODELS, GraphNet
from shared.config import NonNegativeInt, PositiveFloat, PositiveInt
from shared.results import append_metrics
from shared.rng import numpy_rng, stream
from shared.train import preemption

RESOLUTIONS = ("fine", "coarse", "mixed")


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # draws the graphs, the splits and the initializations
    # graph families of the run ("grid_nodes": node regression on one large grid)
    families: tuple[str, ...] = ("molecules", "grids")
    models: tuple[str, ...] = ("gcn", "gin", "sage", "resolvent", "resolvent_k0")  # trained
    gap_only: tuple[str, ...] = ("gcn_mean", "gin_mean", "sage_mean", "resolvent_sum")  # untrained
    train_on: tuple[str, ...] = RESOLUTIONS  # training resolutions (each tested on fine+coarse)
    # within-cluster weight of the fine resolution used for training/testing
    lam: PositiveFloat = 100.0
    # figure
    gap_lams: tuple[PositiveFloat, ...] = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1e3, 3e3, 1e4)
    gap_graphs: PositiveInt = 100  # test graphs averaged in each gap curve
    gap_trained_on: str = "coarse"  # whose trained models get the trained gap curve
    # side of the one large grid (2x2 clusters) in the gap figure; 0: none
    large_grid: NonNegativeInt = 32
    molecules: data_lib.DataConfig = data_lib.DataConfig("molecules")
    grids: data_lib.DataConfig = data_lib.DataConfig("grids", num_graphs=1000)
    grid_nodes: node_task.NodeConfig = node_task.NodeConfig()
    train: train.TrainConfig = train.TrainConfig()

    def __post_init__(self):
        bad = [m for m in self.models + self.gap_only if m not in MODELS]
        if bad or not self.models:
            raise ValueError(
                f"models/gap_only: unknown {bad} (models must be non-empty); "
                f"choose from {list(MODELS)}"
            )
        if not self.families or not set(self.families) <= {"molecules", "grids", "grid_nodes"}:
            raise ValueError(
                f"families={self.families} must be a subset of molecules, grids, grid_nodes"
            )
        if self.molecules.family != "molecules" or self.grids.family != "grids":
            raise ValueError("molecules.family and grids.family must name their own family")
        if not self.train_on or not set(self.train_on) <= set(RESOLUTIONS):
            raise ValueError(f"train_on={self.train_on} must be a subset of {RESOLUTIONS}")
        if self.gap_trained_on not in self.train_on:
            raise ValueError(f"gap_trained_on={self.gap_trained_on!r} must be in train_on")
        if self.lam <= 0 or min(self.gap_lams) <= 0:
            raise ValueError("lam and every gap_lams entry must be positive")
        if self.large_grid % 2 or self.large_grid < 0:
            raise ValueError(f"large_grid={self.large_grid} must be even (2x2 clusters) or 0")


_TINY_DATA = dict(num_graphs=40, heavy_range=(3, 6), grid_sides=(4,))
CONFIGS: dict[str, Config] = {
    # Seconds: every training path (three resolutions, the large grid) on tiny grids; the
    # molecule family is covered by the unit tests and the cpu config.
    "smoke": Config(
        families=("grids",),
        models=("gcn", "resolvent"),
        gap_only=("resolvent_sum",),
        train_on=RESOLUTIONS,
        gap_lams=(1.0, 100.0, 1e4),
        gap_graphs=4,
        large_grid=8,
        molecules=data_lib.DataConfig("molecules", **_TINY_DATA),
        grids=data_lib.DataConfig("grids", **_TINY_DATA),
        train=train.TrainConfig(width=8, depth=2, epochs=2, batch_size=8, epochs_per_call=1),
    ),
    # The default: smaller graphs and sets than the spec's plan, 2 layers, 40 epochs; training
    # on fine, coarse and mixed resolutions.
    "cpu": Config(
        molecules=data_lib.DataConfig("molecules", num_graphs=800, heavy_range=(4, 10)),
        grids=data_lib.DataConfig("grids", num_graphs=500, grid_sides=(4, 6)),
        train=train.TrainConfig(depth=2, epochs=40, batch_size=32),
    ),
    # Node regression on one 32 x 32 grid (2 x 2 clusters, coarse 16 x 16), the spec's "larger
    # graphs": 32 training fields of 1,024 nodes each, batch 4, 2 layers, 40 epochs; trained on
    # fine and on coarse (mixed training costs as much as fine and is left to `main`).
    "grid_nodes": Config(
        families=("grid_nodes",),
        gap_only=(),
        train_on=("fine", "coarse"),
        train=train.TrainConfig(depth=2, epochs=40, batch_size=4, epochs_per_call=20),
    ),
    # The spec's full CPU-scale plan: 2,000 molecules with 5-15 heavy nodes, 1,000 grids up
    # to 8x8, 3 layers, 200 epochs, batch 64, every model trained, mixed-resolution training.
    "paper": Config(
        models=tuple(MODELS),
        gap_only=(),
        train_on=RESOLUTIONS,
        train=train.TrainConfig(epochs=200),
    ),
}


def relative_gap(phi_fine: np.ndarray, phi_coarse: np.ndarray) -> float:
    """sum_g ||Phi(G_lambda) - Phi(G_c)|| / sum_g ||Phi(G_c)|| (a ratio of sums, so one graph
    whose coarse embedding is ~0 cannot dominate)."""
    num = np.linalg.norm(phi_fine - phi_coarse, axis=-1).sum()
    return float(num / max(np.linalg.norm(phi_coarse, axis=-1).sum(), 1e-30))


def gap_curve(
    model: GraphNet, graphs, lams, z: float, n_f: int | None = None, n_c: int | None = None
) -> list[float]:
    """Relative gap at each lambda; graphs padded to n_f (fine) and n_c (coarse) nodes."""
    n_f = n_f or data_lib.max_nodes(graphs, False)
    n_c = n_c or data_lib.max_nodes(graphs, True)
    y = np.zeros(len(graphs))
    coarse = train.embed(model, data_lib.resolution_batch(graphs, y, "coarse", 1.0, z, n_c))
    return [
        relative_gap(
            train.embed(model, data_lib.resolution_batch(graphs, y, "fine", lam, z, n_f)), coarse
        )
        for lam in lams
    ]


def _init(name: str, din: int, tcfg: train.TrainConfig, key: jax.Array) -> GraphNet:
    return GraphNet(name, din, tcfg.width, tcfg.depth, tcfg.powers, rngs=nnx.Rngs(key))


def _large_grid(side: int, dcfg: data_lib.DataConfig, seed: int) -> list[resolution.Multiscale]:
    if side == 0:
        return []
    x = data_lib.smooth_fields(side, side, dcfg.num_fields, numpy_rng(seed, "large_grid"))
    return [resolution.grid(side, side, x)]


def run_family(cfg: Config, family: str, workdir: pathlib.Path, bar: tqdm) -> dict:
    dcfg: data_lib.DataConfig = getattr(cfg, family)
    graphs = data_lib.draw_graphs(dcfg, cfg.seed)
    y = np.array([data_lib.target(g, family, dcfg.z) for g in graphs])
    idx = data_lib.split_indices(len(graphs), dcfg.split, cfg.seed)
    part = {k: [graphs[i] for i in v] for k, v in idx.items()}
    n_f, n_c = data_lib.max_nodes(graphs, False), data_lib.max_nodes(graphs, True)
    sizes = {"fine": n_f, "coarse": n_c, "mixed": n_f}
    batches = {
        (split, res): data_lib.resolution_batch(
            part[split], y[idx[split]], res, cfg.lam, dcfg.z, sizes[res], cfg.seed
        )
        for split in ("train", "val", "test")
        for res in ("fine", "coarse")
    }
    for res in cfg.train_on:
        if res == "mixed":
            batches[("train", res)] = data_lib.resolution_batch(
                part["train"], y[idx["train"]], res, cfg.lam, dcfg.z, n_f, cfg.seed
            )
    gap_set = part["test"][: cfg.gap_graphs]
    large = _large_grid(cfg.large_grid, dcfg, cfg.seed) if family == "grids" else []
    out: dict[str, float] = {}
    curves: dict = {"lams": list(cfg.gap_lams), "models": {}}
    y_train = y[idx["train"]]
    for res in cfg.train_on:  # the constant predictor (train mean) gives the scale
        for test in ("fine", "coarse"):
            err = float(np.abs(y[idx["test"]] - y_train.mean()).mean())
            out[f"{family}/train_mean/{res}_to_{test}"] = err
    out[f"{family}/target_std"] = float(y.std())
    for name in cfg.models + cfg.gap_only:
        din = graphs[0].x.shape[1]
        key = stream(cfg.seed, f"init/{family}/{name}")
        fresh = functools.partial(_init, name, din, cfg.train, key)  # same weights every time
        c = {"untrained": gap_curve(fresh(), gap_set, cfg.gap_lams, dcfg.z, n_f, n_c)}
        if large:
            c["large_untrained"] = gap_curve(fresh(), large, cfg.gap_lams, dcfg.z)
        for res in cfg.train_on if name in cfg.models else ():
            preemption.check(f"training {family}/{name} on {res}")
            bar.set_description(f"{family}/{name}/train on {res}")
            t = train.fit(
                fresh(),
                batches[("train", res)],
                cfg.train,
                stream(cfg.seed, f"data/{family}/{name}/{res}"),
                f"{family}/{name}/{res}",
            )
            for split in ("val", "test"):
                for test in ("fine", "coarse"):
                    b = batches[(split, test)]
                    mae = float(np.abs(train.predict(t, b) - b.y).mean())
                    prefix = "" if split == "test" else "val_"
                    out[f"{family}/{name}/{prefix}{res}_to_{test}"] = mae
            out[f"{family}/{name}/{res}_final_loss"] = t.losses[-1]
            if res == cfg.gap_trained_on:
                c["trained"] = gap_curve(t.model, gap_set, cfg.gap_lams, dcfg.z, n_f, n_c)
                if large:
                    c["large_trained"] = gap_curve(t.model, large, cfg.gap_lams, dcfg.z)
            bar.update()
        for kind, curve in c.items():
            for lam, v in zip(cfg.gap_lams, curve, strict=True):
                out[f"{family}/{name}/gap_{kind}@{lam:g}"] = v
        curves["models"][name] = c
        append_metrics(workdir, {"family": family, "model": name, **c})
    (workdir / f"gaps_{family}.json").write_text(json.dumps(curves, indent=1) + "\n")
    return out


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    workdir.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_default_matmul_precision", "highest")  # gaps reach 1e-5 at 1e4
    total = len(cfg.families) * len(cfg.models) * len(cfg.train_on)
    out: dict[str, float] = {}
    with tqdm(total=total, desc="training", mininterval=5) as bar:
        for family in cfg.families:
            if family == "grid_nodes":
                out |= node_task.run(
                    cfg.grid_nodes, cfg.models, cfg.train, cfg.lam, cfg.train_on, cfg.seed, bar
                )
                continue
            out |= run_family(cfg, family, workdir, bar)
    return out
