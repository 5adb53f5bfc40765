"""Figure: relative embedding gap ||Phi(G_lambda) - Phi(G_coarse)|| / ||Phi(G_coarse)|| against
lambda (log-log), untrained and trained, per model; mean over seeds, band = min..max."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from projects.scale_continuous_gnn.models import MODELS
from shared.results import pyplot, save_figure

PANELS = (
    ("molecules", "untrained", "molecules, at initialization"),
    ("molecules", "trained", "molecules, trained on coarse"),
    ("grids", "untrained", "small grids, at initialization"),
    ("grids", "trained", "grids, trained on coarse"),
    ("grids", "large_untrained", "one large grid (2x2 clusters), at initialization"),
    ("grids", "large_trained", "one large grid, trained on coarse small grids"),
)


def load(workdirs) -> dict[str, list[dict]]:
    """family -> the gaps_<family>.json of every run that has it."""
    out: dict[str, list[dict]] = {}
    for w in workdirs:
        for path in sorted(pathlib.Path(w).glob("gaps_*.json")):
            out.setdefault(path.stem.removeprefix("gaps_"), []).append(json.loads(path.read_text()))
    return out


def gap_figure(runs: dict[str, list[dict]], path: pathlib.Path) -> pathlib.Path:
    plt = pyplot()
    panels = [
        p
        for p in PANELS
        if any(p[1] in c for r in runs.get(p[0], []) for c in r["models"].values())
    ]
    cols = 2
    rows = (len(panels) + 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(11, 3.6 * rows), squeeze=False)
    colors = {m: f"C{i}" for i, m in enumerate(MODELS)}
    for ax, (family, kind, title) in zip(axes.ravel(), panels, strict=False):
        lams = np.asarray(runs[family][0]["lams"])
        for model in MODELS:
            curves = [
                r["models"][model][kind] for r in runs[family] if kind in r["models"].get(model, {})
            ]
            if not curves:
                continue
            c = np.asarray(curves)
            style = "-" if model.startswith("resolvent") else "--"
            ax.plot(
                lams, c.mean(0), style, color=colors[model], label=MODELS[model].label, marker="."
            )
            ax.fill_between(lams, c.min(0), c.max(0), color=colors[model], alpha=0.15)
        ref = lams[0] / lams  # slope -1 guide
        ax.plot(lams, ref * 0.5, ":", color="gray", label="∝ 1/λ")
        ax.set(xscale="log", yscale="log", title=title, xlabel="λ (within-cluster weight)")
        ax.set_ylabel("‖Φ(G_λ) − Φ(G_coarse)‖ / ‖Φ(G_coarse)‖")
        ax.grid(alpha=0.3, which="both")
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7, loc="lower left")
    save_figure(fig, path)
    plt.close(fig)
    return path
