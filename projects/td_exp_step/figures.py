"""Figures (a)-(d) of the spec, drawn from one run directory (summary.json, errors.npz,
schedules.json). Every curve is the mean over the evaluation seeds; tuned rows use the grid value
chosen on the tuning seeds at each T."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.results import pyplot, save_figure

MRPS = {"garnet": "Garnet (σ_r=0.5)", "icu_sepsis": "ICU-Sepsis"}
CURVE_ROWS = (  # (row key, style) of figure (a)
    ("const", "C0-o"),
    ("exp", "C3-s"),
    ("exp_default", "C3:^"),
    ("invt", "C2-d"),
    ("invt_theory", "C1--v"),
    ("invt_theory_x10", "C5--<"),
    ("invt_theory_x0.1", "C6-->"),
    ("sqrt_avg", "C7-x"),
    ("reg_exp", "C4-P"),
)


class RunData:
    def __init__(self, run_dir: pathlib.Path):
        self.summary = json.loads((run_dir / "summary.json").read_text())
        self.schedules = json.loads((run_dir / "schedules.json").read_text())
        self.errors = dict(np.load(run_dir / "errors.npz"))
        self.config = json.loads((run_dir / "config.json").read_text())
        self.by = {(e["mrp"], e["regime"], e["T"], e["row"], e["metric"]): e for e in self.summary}

    def curve(self, mrp: str, regime: str, row: str, metric: str, field: str = "values"):
        """(T, mean over evaluation seeds, label) of one row, or None when not run."""
        ts = [t for t in self.config["horizons"] if (mrp, regime, t, row, metric) in self.by]
        if not ts:
            return None
        means = [np.mean(self.by[(mrp, regime, t, row, metric)][field]) for t in ts]
        return np.array(ts), np.array(means), self.by[(mrp, regime, ts[0], row, metric)]["label"]


def error_vs_horizon(run: RunData, out: pathlib.Path) -> pathlib.Path:
    """(a) E||θ_T - θ*||² vs T (log-log), each schedule at its best grid value, both regimes."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(12, 9), sharex=True)
    for i, mrp in enumerate(MRPS):
        for j, regime in enumerate(("iid", "markov")):
            ax = axes[i, j]
            for row, style in CURVE_ROWS:
                c = run.curve(mrp, regime, row, "param")
                if c is not None:
                    ax.loglog(c[0], c[1], style, label=c[2], ms=4)
            ax.set_title(f"{MRPS[mrp]}, {regime}")
            ax.set_ylabel("E‖θ_T − θ*‖² (eval seeds)")
            ax.grid(True, which="both", alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel("horizon T (each T its own schedule)")
    axes[0, 0].legend(fontsize=7)
    axes[0, 1].legend(fontsize=7)
    return _save(fig, out / "a_error_vs_T.png")


def robustness(run: RunData, out: pathlib.Path) -> pathlib.Path:
    """(b) final error vs η (constant) / η0 (exponential) over the grid, at the largest T."""
    plt = pyplot()
    top = max(run.config["horizons"])
    n_tune = run.config["num_tune_seeds"]
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    for i, mrp in enumerate(MRPS):
        for j, regime in enumerate(("iid", "markov")):
            key = f"{mrp}/{regime}"
            if key not in run.schedules:
                continue
            ax, sched = axes[i, j], run.schedules[key]
            err = run.errors[f"{key}/{top}/param"][n_tune:]
            lines = {"constant": [], "exponential β=1": [], "exponential β=10": []}
            for k, s in enumerate(sched):
                if s["lam"] or s["family"] not in ("constant", "exponential"):
                    continue
                name = s["family"] if s["family"] == "constant" else f"exponential β={s['beta']:g}"
                lines.setdefault(name, []).append((s["value"], np.mean(err[:, k])))
            for name, pts in lines.items():
                if pts:
                    x, y = zip(*sorted(set(pts)), strict=True)
                    ax.loglog(x, np.where(np.isfinite(y), y, np.nan), "o-", label=name, ms=4)
            ax.set_title(f"{MRPS[mrp]}, {regime}, T={top:.0e}")
            ax.set_xlabel("η (constant) or η0 (exponential)")
            ax.set_ylabel("E‖θ_T − θ*‖² (eval seeds)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    return _save(fig, out / "b_robustness_eta0.png")


def noise(run: RunData, out: pathlib.Path) -> pathlib.Path:
    """(c) Garnet i.i.d.: σ_r = 0 vs 0.5 for the exponential (and, for reference, constant)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for mrp, sigma, ls in (("garnet", "0.5", "-"), ("garnet_noiseless", "0", "--")):
        for row, color in (("exp", "C3"), ("exp_default", "C1"), ("const", "C0")):
            c = run.curve(mrp, "iid", row, "param")
            if c is not None:
                ax.loglog(
                    c[0], c[1], ls, color=color, marker="o", ms=4, label=f"{c[2]}, σ_r={sigma}"
                )
    ax.set_xlabel("horizon T")
    ax.set_ylabel("E‖θ_T − θ*‖² (eval seeds)")
    ax.set_title("Garnet, i.i.d.: reward noise σ_r = 0 vs 0.5")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, out / "c_noise.png")


def regularized(run: RunData, out: pathlib.Path) -> pathlib.Path:
    """(d) Markovian: regularized vs plain exponential TD, error to θ* and to θ_λ vs T."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, mrp in zip(axes, MRPS, strict=True):
        for row, color in (("exp", "C3"), ("reg_exp", "C4")):
            c = run.curve(mrp, "markov", row, "param")
            if c is None:
                continue
            ax.loglog(c[0], c[1], "-o", color=color, ms=4, label=f"{c[2]}: ‖θ_T − θ*‖²")
            r = run.curve(mrp, "markov", row, "param", "values_reg")
            if row == "reg_exp":
                ax.loglog(r[0], r[1], "--s", color=color, ms=4, label=f"{c[2]}: ‖θ_T − θ_λ‖²")
        ax.set_title(f"{MRPS[mrp]}, Markovian")
        ax.set_xlabel("horizon T")
        ax.set_ylabel("mean over eval seeds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, out / "d_markov_regularized.png")


def _save(fig, path: pathlib.Path) -> pathlib.Path:
    save_figure(fig, path)
    fig.clf()
    return path


def write_all(run_dir: pathlib.Path, out: pathlib.Path) -> list[pathlib.Path]:
    run = RunData(run_dir)
    return [f(run, out) for f in (error_vs_horizon, robustness, noise, regularized)]
