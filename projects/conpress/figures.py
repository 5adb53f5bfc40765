"""The spec's figures: r(N) against N, and tokens against accuracy per model, drawn from the
run behind a table (each repeat faint, the mean bold)."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.results import pyplot, save_figure

LABELS = {
    "base": "base",
    "control": "control SFT",
    "conpress": "ConPress SFT",
    "conpress_unfiltered": "ConPress, no correctness filter",
    "conpress_length": "ConPress + length filter",
}


def repeats_of(run_dir: pathlib.Path) -> list[dict[str, float]]:
    """Per-repeat metrics of a run: `rep{r}/name` -> [{name: value} for each r]."""
    metrics = json.loads((run_dir / "results.json").read_text())
    reps: dict[int, dict[str, float]] = {}
    for key, value in metrics.items():
        if key.startswith("rep") and "/" in key:
            r, name = key.split("/", 1)
            reps.setdefault(int(r[3:]), {})[name] = value
    return [reps[r] for r in sorted(reps)]


def ns_of(reps) -> list[int]:
    return sorted({int(k.split("/")[1][1:]) for k in reps[0] if k.startswith("rn/N")})


def rn_axes(ax, reps, label: str, color: str) -> None:
    """r(N) (correct in both) and r(N) (all parsed) against N on a log2 axis."""
    ns = ns_of(reps)
    for key, style in (("r_correct", "-o"), ("r_all", "--s")):
        values = np.array([[rep.get(f"rn/N{n}/{key}", np.nan) for n in ns] for rep in reps])
        for row in values:
            ax.plot(ns, row, style, color=color, alpha=0.2, lw=0.8, ms=3)
        which = "correct in both" if key == "r_correct" else "all parsed"
        ax.plot(ns, np.nanmean(values, 0), style, color=color, label=f"{label} ({which})")
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_xscale("log", base=2)
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_xlabel("questions per prompt N")
    ax.set_ylabel("r(N) = tokens per question / single-question tokens")


def main_figures(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """results/main_rn.png and results/main_tokens_vs_accuracy.png."""
    reps = repeats_of(next(iter(workdirs.values())))
    title = f"Self-compression (built in by construction), {len(reps)} repeats"
    rn = _rn_figure(reps, "synthetic base model", "C0", title, out_dir / "main_rn.png")
    plt = pyplot()

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, split in zip(axes, ("in_dist", "hard")):
        for i, (prefix, label) in enumerate(LABELS.items()):
            x = [rep.get(f"{prefix}/{split}_tokens") for rep in reps]
            y = [rep.get(f"{prefix}/{split}_acc") for rep in reps]
            if None in x or None in y:
                continue
            ax.scatter(x, y, color=f"C{i}", alpha=0.3, s=15)
            ax.scatter(np.mean(x), np.mean(y), color=f"C{i}", s=60, label=label, marker="D")
        ax.set_xlabel("tokens per question (single-question prompt)")
        ax.set_ylabel("accuracy")
        ax.set_title("in-distribution (3-6 ops)" if split == "in_dist" else "hard (7-8 ops)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    scatter = out_dir / "main_tokens_vs_accuracy.png"
    save_figure(fig, scatter)
    plt.close(fig)
    return [rn, scatter]


def smollm2_figure(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """results/smollm2_rn.png: the real model's r(N)."""
    reps = repeats_of(next(iter(workdirs.values())))
    title = f"SmolLM2-135M-Instruct on word problems, {len(reps)} sampling seeds"
    return [_rn_figure(reps, "SmolLM2-135M-Instruct", "C3", title, out_dir / "smollm2_rn.png")]


def _rn_figure(reps, label: str, color: str, title: str, path: pathlib.Path) -> pathlib.Path:
    """One r(N)-vs-N figure of a model's repeats, saved to `path`."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    rn_axes(ax, reps, label, color)
    ax.set_title(title)
    ax.legend(fontsize=8)
    save_figure(fig, path)
    plt.close(fig)
    return path
