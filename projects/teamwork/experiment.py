"""TeamWork (role-aware multivariate time-series anomaly detection): configs and entry point.

    python launch/run.py projects/teamwork                  # cpu config: synthetic benchmark
    python launch/run.py projects/teamwork --config smoke   # seconds, for tests
    python launch/run.py projects/teamwork --set benchmark=daphnet --seed 1
    python launch/run.py projects/teamwork --set benchmark=ucr135   # real labels, one channel

One run = one benchmark and seed: roles and periods from the training split, then every method
in `methods` trained and scored under the same protocol (TSLib threshold at the true anomaly
ratio, F1 / PA-F1, affiliation F1, VUS-PR / VUS-ROC). Model details are Reconstructions (README).
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import time
from typing import Literal

import numpy as np

from projects.teamwork import detect
from projects.teamwork.model import ModelConfig
from projects.teamwork.periods import fft_periods, spans_from_periods
from projects.teamwork.roles import assign_roles, role_scores, select_lag_order
from shared.config import Fraction, NonNegativeInt, PositiveInt
from shared.data.timeseries_files import load_daphnet, load_local, load_ucr135
from shared.data.timeseries_generator import ANOMALY_TYPES, AnomalySeries, make_benchmark
from shared.metrics.anomaly import affiliation_prf1, predict, tslib_protocol, vus
from shared.results import append_metrics
from shared.rng import numpy_rng

Benchmark = Literal["synthetic", "nonlinear", "daphnet", "ucr135", "smd", "msl", "smap", "psm"]
LOCAL = ("smd", "msl", "smap", "psm")  # read from data_dir (shared.data.timeseries_files)
# method -> (coupling, gate, role source, span choice); "pca" is handled apart
NEURAL = {
    "teamwork": ("role", True, "learned", "all"),
    "independent": ("none", True, "learned", "all"),
    "symmetric": ("symmetric", True, "learned", "all"),
    "random_roles": ("role", True, "random", "all"),
    "inverted_roles": ("role", True, "inverted", "all"),
    "single_span": ("role", True, "learned", "middle"),
    "no_gate": ("role", False, "learned", "all"),
}
METHODS = (*NEURAL, "pca")


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # seeds the benchmark, the initialization, windows and masks
    # synthetic | nonlinear (tanh auxiliaries) | daphnet (+ injected) | ucr135 (real labels,
    # univariate: the seed varies the models only) | smd, msl, smap, psm (local files)
    benchmark: Benchmark = "synthetic"
    data_dir: str = ""  # smd/msl/smap/psm: directory of the Anomaly-Transformer files
    length: PositiveInt = 15_000  # generated steps (2/3 train); ignored for daphnet and ucr135
    methods: tuple[str, ...] = ("teamwork", "independent", "symmetric", "pca")
    window: PositiveInt = 100  # steps per window; FFT periods longer than this cannot be seen
    num_dominant: NonNegativeInt = 0  # 0: ceil(C / 4) (spec's suggestion)
    # Granger lag order q; 0: BIC of own-lag AR fits on train (roles.py)
    role_lags: NonNegativeInt = 0
    # BIC searches q in 1..role_max_lags; 0: window // 2 (fixed rule)
    role_max_lags: NonNegativeInt = 0
    num_periods: PositiveInt = 3  # top-k FFT periods -> mask spans
    pca_lag: PositiveInt = 8  # PCA baseline: steps per flattened window
    pca_var: Fraction = 0.95  # PCA baseline: explained variance kept
    vus_window: NonNegativeInt = 50  # VUS max buffer length
    model: ModelConfig = ModelConfig()
    train: detect.TrainConfig = detect.TrainConfig()

    def validate(self) -> None:
        bad = [m for m in self.methods if m not in METHODS]
        if bad or not self.methods:
            raise ValueError(f"methods {self.methods}: choose from {METHODS}")
        if self.benchmark not in ("synthetic", "nonlinear", "daphnet", "ucr135", *LOCAL):
            raise ValueError(
                f"benchmark={self.benchmark!r}: synthetic, nonlinear, daphnet, ucr135 or one of "
                f"{LOCAL}"
            )
        if self.window % self.model.patch:
            raise ValueError(f"window={self.window} must be a multiple of model.patch")
        if self.model.d_model % self.model.num_heads:
            raise ValueError("model.d_model must be divisible by model.num_heads")
        if self.role_lags < 0 or self.role_max_lags < 0:
            raise ValueError("role_lags and role_max_lags must be >= 0 (0: automatic)")

    def __post_init__(self):
        self.validate()


CONFIGS: dict[str, Config] = {
    # Seconds: short series, a few steps; TeamWork and PCA (the other methods share their code
    # paths and are built by the config tests; each costs ~10 s of compilation).
    "smoke": Config(
        length=3000,
        methods=("teamwork", "pca"),
        window=40,
        model=ModelConfig(d_model=16, num_heads=2, ff_dim=32, patch=4),
        train=detect.TrainConfig(steps=6, batch_size=8),
        vus_window=10,
    ),
    # The default: the spec's synthetic benchmark, d_model 32, 1 layer, 200 steps of 16 windows.
    "cpu": Config(),
    # Suggested paper-scale setting (spec section 4): SMD, window 100, d 128, 3 layers, batch
    # 256, a checkpoint every 1,000 steps.
    "paper": Config(
        benchmark="smd",
        data_dir="data/smd",
        model=ModelConfig(d_model=128, num_layers=3, ff_dim=256, patch=4),
        train=detect.TrainConfig(steps=20_000, batch_size=256, lr=1e-4, checkpoint_every=1000),
    ),
}


def load(cfg: Config) -> AnomalySeries:
    if cfg.benchmark == "daphnet":
        return load_daphnet(cfg.seed)
    if cfg.benchmark == "ucr135":
        return load_ucr135()
    if cfg.benchmark in LOCAL:
        return load_local(cfg.benchmark.upper(), cfg.data_dir)
    return make_benchmark(cfg.seed, length=cfg.length, nonlinear=cfg.benchmark == "nonlinear")


def evaluate(
    train_scores: np.ndarray, test_scores: np.ndarray, labels: np.ndarray, vus_window: int
) -> dict[str, float]:
    """Every metric of the main table for one method."""
    ratio = 100.0 * float(labels.mean())  # the true anomaly ratio, in percent (TSLib convention)
    out = tslib_protocol(train_scores, test_scores, labels, ratio)
    pred = predict(test_scores, out["threshold"])
    v = vus(labels, test_scores, vus_window)
    return {
        "f1": out["f1"],
        "pa_f1": out["pa_f1"],
        "aff_f1": affiliation_prf1(labels, pred).f1,
        "vus_pr": v.pr,
        "vus_roc": v.roc,
    }


def breakdown(series: AnomalySeries, test_scores: np.ndarray, vus_window: int) -> dict:
    """VUS-PR on the normal steps plus the anomalies of one kind only (others dropped): per
    injected type, and per role of the changed channel where the roles are known."""
    subsets = {}
    if series.test_types is not None:
        for kind in ANOMALY_TYPES:
            subsets[kind] = series.test_types == series.type_names.index(kind)
    if series.channel_roles is not None and series.events:
        for role in ("dominant", "auxiliary"):
            sel = np.zeros(len(series.test_labels), bool)
            for ev in series.events:
                if series.channel_roles[ev.channel] == role:
                    sel[ev.start : ev.end] = True
            subsets[f"on_{role}"] = sel
    out = {}
    for name, sel in subsets.items():
        if sel.any():
            keep = sel | (series.test_labels == 0)
            out[f"vus_pr_{name}"] = vus(series.test_labels[keep], test_scores[keep], vus_window).pr
    return out


def _roles(source: str, learned: np.ndarray, scores: np.ndarray, seed: int) -> np.ndarray:
    if source == "learned":
        return learned
    if source == "inverted":
        return assign_roles(-scores, int(learned.sum()))
    perm = numpy_rng(seed, "random_roles").permutation(len(learned))
    return np.isin(np.arange(len(learned)), perm[: int(learned.sum())])


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Trains and scores every method in `cfg.methods` on one benchmark; returns flat metrics."""
    series = load(cfg)
    mu, sd = series.train.mean(0), series.train.std(0)
    sd = np.where(sd > 1e-8, sd, 1.0)  # a constant channel stays 0 instead of dividing by 0
    train, test = (series.train - mu) / sd, (series.test - mu) / sd
    c = train.shape[1]
    k = cfg.num_dominant or math.ceil(c / 4)
    q = cfg.role_lags or select_lag_order(train, cfg.role_max_lags or cfg.window // 2)[0]
    scores = role_scores(train, q, max_steps=10_000)
    is_dom = assign_roles(scores, k)
    n_win = len(train) // cfg.window
    periods = fft_periods(
        train[: n_win * cfg.window].reshape(n_win, cfg.window, c), cfg.num_periods
    )
    spans = spans_from_periods(periods)
    metrics: dict[str, float] = {"data/periods_" + str(i): float(p) for i, p in enumerate(periods)}
    metrics["data/role_lags"] = float(q)
    # With one channel (ucr135) k = 1 and no auxiliary is left: the role machinery is idle.
    metrics["data/num_auxiliary"] = float(c - is_dom.sum())
    # The strongest period of the whole train split by the same FFT rule: one longer than the
    # window cannot be among the mask periods found inside windows.
    metrics["data/train_period"] = float(fft_periods(train[None], 1)[0])
    if series.channel_roles is not None:
        true_dom = np.array([r == "dominant" for r in series.channel_roles])
        metrics["data/role_recall"] = float((is_dom & true_dom).sum() / true_dom.sum())
    saved = {"test": series.test, "labels": series.test_labels, "is_dom": is_dom}
    for method in cfg.methods:
        t0 = time.perf_counter()
        if method == "pca":
            tr_s = detect.pca_scores(train, train, cfg.pca_lag, cfg.pca_var)
            te_s = detect.pca_scores(train, test, cfg.pca_lag, cfg.pca_var)
        else:
            coupling, gate, source, span_choice = NEURAL[method]
            dom = _roles(source, is_dom, scores, cfg.seed)
            sp = (spans[len(spans) // 2],) if span_choice == "middle" else spans
            model = detect.train_detector(
                train,
                dom,
                sp,
                cfg.window,
                coupling,
                gate,
                cfg.model,
                cfg.train,
                cfg.seed,
                workdir / "metrics.jsonl",
                method,
                workdir / "checkpoints" / method,  # a rerun with this workdir resumes
            )
            tr_s = detect.score_series(model, train, dom, sp, cfg.window, cfg.train.mask_ratio)
            te_s = detect.score_series(model, test, dom, sp, cfg.window, cfg.train.mask_ratio)
        res = evaluate(tr_s, te_s, series.test_labels, cfg.vus_window)
        res |= breakdown(series, te_s, cfg.vus_window)
        metrics |= {f"{method}/{key}": val for key, val in res.items()}
        saved[method] = te_s
        append_metrics(workdir, {"phase": method, "seconds": time.perf_counter() - t0, **res})
    np.savez_compressed(workdir / "scores.npz", **saved)
    return metrics
