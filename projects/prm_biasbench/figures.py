"""Figures: r_last against the Hamming distance from the GCG suffix (tier 2) and the hacking gap,
PRM reward and exact-match accuracy over RL steps (tier 3); mean over seeds, one line per PRM."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.results import pyplot, save_figure


def _load(run_dirs: list[pathlib.Path], name: str) -> list[dict]:
    return [json.loads((d / name).read_text()) for d in run_dirs if (d / name).exists()]


def hamming(run_dirs: list[pathlib.Path], out: pathlib.Path) -> pathlib.Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.5))
    runs = _load(run_dirs, "tier2_curves.json")
    for prm in sorted({p for r in runs for p in r}):
        curves = np.array([r[prm]["hamming_r"] for r in runs if prm in r])
        d = np.arange(curves.shape[1])
        ax.errorbar(d, curves.mean(0), yerr=curves.std(0), marker="o", capsize=3, label=prm)
    ax.set(xlabel="Hamming distance from the GCG suffix", ylabel="mean r_last", ylim=(0, 1))
    ax.legend()
    path = out / "tier2_hamming.png"
    save_figure(fig, path)
    plt.close(fig)
    return path


def hacking_gap(run_dirs: list[pathlib.Path], out: pathlib.Path) -> pathlib.Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    runs = _load(run_dirs, "tier3.json")
    steps = min(len(r["curve"]["step"]) for r in runs)
    x = np.asarray(runs[0]["curve"]["step"][:steps])
    for key, label in (("prm_reward", "PRM reward (r_last)"), ("accuracy", "exact-match accuracy")):
        y = np.array([r["curve"][key][:steps] for r in runs])
        ax.plot(x, y.mean(0), label=label)
        ax.fill_between(x, y.min(0), y.max(0), alpha=0.2)
    ax.set(xlabel="RL step (GRPO)", ylabel="mean over the step's samples", ylim=(0, 1))
    ax.legend()
    path = out / "tier3_hacking_gap.png"
    save_figure(fig, path)
    plt.close(fig)
    return path


def write(table: str, run_dirs: list[pathlib.Path], out: pathlib.Path) -> list[pathlib.Path]:
    if table == "tier2":
        return [hamming(run_dirs, out)]
    if table == "tier3":
        return [hacking_gap(run_dirs, out)]
    return []
