"""The detailed table and the figures, written from the run of the `main` table (reproduce.py
calls `write_all` after writing main.md): details.md/.json, regime_map.png, mse_vs_n.png."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.results import pyplot, save_figure, write_json

ORDER = (
    "IS", "WIS", "PDIS", "WPDIS", "DR", "MRDR", "Shaped-heur", "Shaped-learned", "Hybrid",
    "Hybrid-insample", "DR-exact",
)  # fmt: skip


def _pm(mean: float, se: float) -> str:
    return f"{mean:.4g} ± {se:.2g}"


def details_table(summary: dict, metrics: dict, note: str) -> tuple[str, dict]:
    """Markdown + json: per problem and n, bias, sd and MSE (± standard errors over the
    repetitions), MSE relative to DR, and the largest importance weights."""
    lines = ["# Bias, standard deviation and MSE per estimator (± standard errors)", ""]
    data = {"sections": []}
    for name, info in summary["problems"].items():
        ns = sorted({int(k.split("/")[0][1:]) for k in info["cells"]})
        for n in ns:
            cells = {k.split("/")[1]: v for k, v in info["cells"].items() if k.startswith(f"n{n}/")}
            mse_dr = cells["DR"]["mse"]
            truth = f"truth {info['truth']:.6g}" + (
                f" ± {info['truth_se']:.2g}" if info["truth_se"] else " (exact DP)"
            )
            w_max = metrics[f"weights/{name}/n{n}/max"]
            w_med = metrics[f"weights/{name}/n{n}/median_of_rep_max"]
            w_mean = metrics[f"weights/{name}/n{n}/mean_final"]
            second = info["weight_second_moment"]
            lines += [
                f"## {name}, n = {n} ({truth})",
                "",
                f"Largest importance weight w_t over all repetitions: {w_max:.4g} (median over "
                f"repetitions of each one's largest: {w_med:.4g}); nothing clipped. Mean of "
                f"w_(H-1) over all trajectories: {w_mean:.3g} (expectation 1); exact "
                f"E_mu[w_(H-1)^2] = {second:.3g}, i.e. an effective sample size of about "
                f"n / {second:.3g}.",
                "",
                "| estimator | bias | sd | MSE | MSE / MSE(DR) |",
                "|---|---|---|---|---|",
            ]
            for e in ORDER:
                if e not in cells:
                    continue
                c = cells[e]
                lines.append(
                    f"| {e} | {_pm(c['bias'], c['bias_se'])} | {_pm(c['sd'], c['sd_se'])} | "
                    f"{_pm(c['mse'], c['mse_se'])} | {c['mse'] / mse_dr:.3g} |"
                )
            lines.append("")
            data["sections"].append(
                {"problem": name, "n": n, "truth": info["truth"], "truth_se": info["truth_se"],
                 "max_weight": w_max, "median_rep_max_weight": w_med,
                 "mean_final_weight": w_mean, "weight_second_moment": second, "cells": cells}
            )  # fmt: skip
    data["note"] = note  # the footer is the table's (shared.table_writer stamps it)
    return "\n".join(lines + [f"_{note}._"]) + "\n", data


def regime_map(summary: dict, path: pathlib.Path) -> None:
    """Cell colour = the estimator of lowest MSE; text = its name and log10(MSE_hybrid/MSE_DR)."""
    plt = pyplot()
    cells = summary["regime"]
    sparsities = list(dict.fromkeys(c["sparsity"] for c in cells))
    rows = list(dict.fromkeys((c["q"], c["noise"]) for c in cells))
    # colour: the best of the unbiased family (the self-normalized WIS/WPDIS are biased and are
    # named separately in the text when they beat it)
    everything = [e for e in ORDER if e in cells[0]["stats"]]
    names = [e for e in everything if e not in ("WIS", "WPDIS")]
    colours = plt.get_cmap("tab20")(np.linspace(0, 1, 20))[: len(names)]
    grid = np.zeros((len(rows), len(sparsities), 4))
    fig, ax = plt.subplots(figsize=(2.2 * len(sparsities) + 2, 0.8 * len(rows) + 1.5))
    for c in cells:
        i, j = rows.index((c["q"], c["noise"])), sparsities.index(c["sparsity"])
        mse = {e: c["stats"][e]["mse"] for e in names}
        best = min(mse, key=mse.get)
        grid[i, j] = colours[names.index(best)]
        ratio = np.log10(mse["Hybrid"] / mse["DR"])
        overall = min(everything, key=lambda e: c["stats"][e]["mse"])
        extra = f"\n(all: {overall})" if overall != best else ""
        ax.text(j, i, f"{best}\n{ratio:+.2f}{extra}", ha="center", va="center", fontsize=8)
    ax.imshow(grid, aspect="auto")
    ax.set_xticks(range(len(sparsities)), [f"reward: {s}" for s in sparsities])
    ax.set_yticks(
        range(len(rows)), [f"Q-hat {'tabular' if q == 'tabular' else 'misspec.'}, σ={s}"
                           for q, s in rows]
    )  # fmt: skip
    ax.set_title("Chain: best unbiased estimator by MSE; log10(MSE_hybrid / MSE_DR)", fontsize=9)
    save_figure(fig, path)
    plt.close(fig)


def mse_vs_n(summary: dict, path: pathlib.Path) -> None:
    """log MSE against n, one panel per problem, one line per estimator (± 1 standard error)."""
    plt = pyplot()
    probs = list(summary["problems"])
    fig, axes = plt.subplots(1, len(probs), figsize=(4.2 * len(probs), 4), squeeze=False)
    for ax, name in zip(axes[0], probs, strict=True):
        cells = summary["problems"][name]["cells"]
        ns = sorted({int(k.split("/")[0][1:]) for k in cells})
        for e in ORDER:
            if f"n{ns[0]}/{e}" not in cells:
                continue
            mse = np.array([cells[f"n{n}/{e}"]["mse"] for n in ns])
            se = np.array([cells[f"n{n}/{e}"]["mse_se"] for n in ns])
            style = "--" if e in ("Hybrid-insample", "DR-exact", "WIS", "WPDIS") else "-"
            colour = plt.get_cmap("tab20")(ORDER.index(e) / len(ORDER))  # 11 distinct colours
            ax.errorbar(
                ns, mse, yerr=se, label=e, ls=style, marker="o", ms=3, capsize=2, color=colour
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n trajectories")
        ax.set_title(name)
    axes[0, 0].set_ylabel("MSE")
    axes[0, -1].legend(fontsize=7, loc="best")
    save_figure(fig, path)
    plt.close(fig)


def write_all(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    (workdir,) = workdirs.values()  # the table has one run: its repetitions are the seeds
    summary = json.loads((workdir / "summary.json").read_text())
    metrics = json.loads((workdir / "results.json").read_text())
    secs = sum(v for k, v in metrics.items() if k.startswith("time/"))
    note = f"config `{table.config}`, one run; compute {secs:.0f} s"
    md, data = details_table(summary, metrics, note)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "details.md", out_dir / "details.json"]
    paths[0].write_text(md)
    write_json(paths[1], data)
    if summary["regime"]:
        paths.append(out_dir / "regime_map.png")
        regime_map(summary, paths[-1])
        write_json(out_dir / "regime_map.json", {"cells": summary["regime"], "note": note})
        paths.append(out_dir / "regime_map.json")
    paths.append(out_dir / "mse_vs_n.png")
    mse_vs_n(summary, paths[-1])
    return paths
