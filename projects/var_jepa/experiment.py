"""Var-JEPA / Var-T-JEPA on tabular data: configs and the experiment entry point.

    python launch/run.py projects/var_jepa                  # cpu config: Adult, all methods
    python launch/run.py projects/var_jepa --config smoke   # seconds, for tests
    python launch/run.py projects/var_jepa --set data.name=letter --seed 1

One run = one dataset: raw-feature baselines (linear, MLP, GBDT), T-JEPA pretraining + linear
probe and MLP on its frozen embeddings, the same for Var-T-JEPA, and representation diagnostics.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from typing import Literal

import numpy as np

from projects.var_jepa import evaluate, pretrain
from projects.var_jepa.masks import MaskConfig
from projects.var_jepa.pretrain import PretrainConfig
from projects.var_jepa.tjepa_model import ModelConfig
from projects.var_jepa.var_model import VarConfig
from shared.config import NonNegativeInt
from shared.data import tabular
from shared.results import append_metrics, is_writer, pyplot, save_figure
from shared.train.supervised import HeadConfig

Method = Literal["raw", "tjepa", "var_tjepa"]


@dataclasses.dataclass(frozen=True)
class DataConfig:
    # adult | letter | magic | keel:<set> | diamonds | breast_cancer | wine | digits | diabetes
    # | synthetic | csv:<adult|helena|jannis|aloi|california|higgs> (read from data_dir)
    name: str = "adult"
    data_dir: str = ""  # directory of <name>.csv / .parquet for csv:<name>
    max_pretrain_rows: NonNegativeInt = 0  # 0: pretrain on the whole training split

    def __post_init__(self):
        tabular.check_name(self.name)


@dataclasses.dataclass(frozen=True)
class ProbeConfig:
    # T-JEPA's linear probe: lr 1e-3, weight decay 2e-5 (official code).
    linear: HeadConfig = HeadConfig(lr=1e-3, weight_decay=2e-5)
    # MLP head (the official MLP is tuned per dataset; this is a Suggested setting).
    mlp: HeadConfig = HeadConfig(hidden=(256, 256), dropout=0.1, lr=1e-3, weight_decay=1e-5)


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # seeds the split, initialization, masks, data order and heads
    methods: tuple[Method, ...] = ("raw", "tjepa", "var_tjepa")  # what this run trains
    data: DataConfig = DataConfig()
    model: ModelConfig = ModelConfig()  # shared by T-JEPA and Var-T-JEPA (Var uses no [REG])
    mask: MaskConfig = MaskConfig()
    pretrain: PretrainConfig = PretrainConfig()
    var: VarConfig = VarConfig()
    probe: ProbeConfig = ProbeConfig()

    def validate(self) -> None:
        self.mask.validate()
        if not self.methods:
            raise ValueError("methods is empty; choose from ('raw', 'tjepa', 'var_tjepa')")
        if self.pretrain.steps < 1 or self.pretrain.batch_size < 1:
            raise ValueError("pretrain.steps and pretrain.batch_size must be >= 1")
        if (
            self.model.hidden_dim % self.model.num_heads
            or self.model.pred_dim % self.model.pred_heads
        ):
            raise ValueError(
                "model.hidden_dim must be divisible by model.num_heads and "
                "model.pred_dim by model.pred_heads"
            )

    def __post_init__(self):
        self.validate()


_TINY_HEAD = dict(max_rounds=3, patience=2, batch_size=64)

CONFIGS: dict[str, Config] = {
    # Seconds: a tiny model on the synthetic table, every code path exercised.
    "smoke": Config(
        data=DataConfig(name="synthetic", max_pretrain_rows=512),
        model=ModelConfig(
            hidden_dim=8,
            num_layers=1,
            num_heads=2,
            ff_dim=16,
            dropout=0.0,
            pred_dim=8,
            pred_layers=1,
            pred_heads=2,
            pred_ff_dim=16,
        ),
        pretrain=PretrainConfig(
            steps=8,
            batch_size=64,
            warmup_steps=2,
            checkpoint_every=4,
            log_every=4,
            size_buckets=1,  # one compilation of the T-JEPA step (buckets: test_fast_step.py)
        ),
        probe=ProbeConfig(
            linear=HeadConfig(**_TINY_HEAD), mlp=HeadConfig(hidden=(16,), **_TINY_HEAD)
        ),
    ),
    # The default: Adult with the spec's suggested CPU-scale model, minutes on 2 cores.
    # Suggested settings for 2 CPU cores: no dropout and a 64-wide predictor FFN.
    "cpu": Config(
        model=ModelConfig(dropout=0.0, pred_ff_dim=64),
        pretrain=PretrainConfig(steps=400, warmup_steps=40),
    ),
    # T-JEPA's published jannis setup (scripts/launch_tjepa.sh); data read from a local directory.
    "paper": Config(
        data=DataConfig(name="csv:jannis", data_dir="data/tjepa"),
        model=ModelConfig(
            hidden_dim=64,
            num_layers=16,
            num_heads=2,
            ff_dim=64,
            dropout=0.0018542257314766695,  # MODEL_DROPOUT_PROB
            pred_dropout=0.0019307456645321797,  # PRED_P_DROPOUT
            pred_dim=16,
            pred_layers=16,
            pred_heads=4,
            pred_ff_dim=256,
        ),
        pretrain=PretrainConfig(
            steps=300 * (83733 * 7 // 10 // 512),
            batch_size=512,
            lr=3.66e-4,
            warmup_steps=10 * (83733 * 7 // 10 // 512),
            checkpoint_every=1000,
            data_parallel=True,  # a pod: batches split over every device (rehearsal.py)
        ),
    ),
}


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Trains and evaluates every method in `cfg.methods` on one dataset; returns flat metrics."""
    data = tabular.load(cfg.data.name, cfg.data.data_dir or None)
    splits = tabular.split(data, cfg.seed)
    pre_rows = splits.train
    if cfg.data.max_pretrain_rows and len(pre_rows) > cfg.data.max_pretrain_rows:
        keep = np.random.default_rng(cfg.seed).permutation(len(pre_rows))[
            : cfg.data.max_pretrain_rows
        ]
        pre_rows = pre_rows.take(np.sort(keep))
    heads = {"linear": cfg.probe.linear, "mlp": cfg.probe.mlp}
    metrics: dict[str, float] = {}

    def timed(name: str, fn):
        t0 = time.perf_counter()
        out = fn()
        append_metrics(workdir, {"phase": name, "seconds": time.perf_counter() - t0})
        return out

    if "raw" in cfg.methods:
        feats = evaluate.raw_features(splits)
        metrics |= timed(
            "raw_heads", lambda: evaluate.heads_on_features(splits, feats, heads, cfg.seed, "raw")
        )
        metrics |= timed("raw_gbdt", lambda: evaluate.gbdt(splits, cfg.seed))

    def embeddings(pre, kind):
        outs = {s: pretrain.embed(pre, kind, getattr(splits, s)) for s in ("train", "val", "test")}
        return {s: o[0] for s, o in outs.items()}, outs["test"][1]

    if "tjepa" in cfg.methods:
        pre = timed(
            "tjepa_pretrain",
            lambda: pretrain.train_tjepa(
                pre_rows, cfg.model, cfg.mask, cfg.pretrain, cfg.seed, workdir
            ),
        )
        feats, _ = embeddings(pre, "tjepa")
        metrics["tjepa/probe_dim"] = float(feats["test"].shape[1])
        metrics |= evaluate.collapse_stats(feats["test"], "tjepa")
        metrics |= timed(
            "tjepa_heads",
            lambda: evaluate.heads_on_features(splits, feats, heads, cfg.seed, "tjepa"),
        )

    if "var_tjepa" in cfg.methods:
        pre = timed(
            "var_tjepa_pretrain",
            lambda: pretrain.train_var_tjepa(
                pre_rows, cfg.model, cfg.mask, cfg.var, cfg.pretrain, cfg.seed, workdir
            ),
        )
        feats, sigma = embeddings(pre, "var_tjepa")
        metrics["var_tjepa/probe_dim"] = float(feats["test"].shape[1])
        metrics |= evaluate.collapse_stats(feats["test"], "var_tjepa")
        unc, per_feature = evaluate.uncertainty_stats(sigma, data.noise_features, "var_tjepa")
        metrics |= unc
        _plot_sigma(per_feature, data, workdir)
        metrics |= timed(
            "var_tjepa_heads",
            lambda: evaluate.heads_on_features(splits, feats, heads, cfg.seed, "var_tjepa"),
        )
    return metrics


def _plot_sigma(per_feature: np.ndarray, data: tabular.TabularData, workdir: pathlib.Path) -> None:
    """Mean posterior sigma per feature, noise-injected features highlighted (process 0)."""
    if not is_writer():
        return
    (workdir / "sigma_per_feature.json").write_text(
        json.dumps(dict(zip(data.feature_names, map(float, per_feature))), indent=2)
    )
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.3 * len(per_feature)), 3))
    colors = [
        "tab:red" if j in data.noise_features else "tab:blue" for j in range(len(per_feature))
    ]
    ax.bar(range(len(per_feature)), per_feature, color=colors)
    ax.set_xticks(range(len(per_feature)), data.feature_names, rotation=90, fontsize=7)
    ax.set_ylabel("mean posterior σ")
    ax.set_title(f"Var-T-JEPA latent uncertainty on {data.name} (red: noise-injected)")
    save_figure(fig, workdir / "sigma_per_feature.png")
    plt.close(fig)
