"""Figure: one test window of a synthetic run, its channels, the true anomalies and each
method's score (read from the runs' scores.npz)."""

from __future__ import annotations

import pathlib

import numpy as np

from shared.results import pyplot, save_figure


def score_figure(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Draws the seed-0 synthetic run; returns the written paths (none if it is missing)."""
    key = next((k for k in workdirs if k[1] == 0 and "benchmark='synthetic'" in k[0]), None)
    if key is None or not (workdirs[key] / "scores.npz").exists():
        return []
    d = np.load(workdirs[key] / "scores.npz")
    labels, test = d["labels"], d["test"]
    methods = [m for m in ("teamwork", "independent", "symmetric", "pca") if m in d]
    # the 400 steps that hold the most distinct anomaly segments, so the window is informative
    starts = np.flatnonzero(np.diff(np.concatenate([[0], labels])) == 1)
    best = max(
        range(0, len(labels) - 400, 50), key=lambda s: ((starts >= s) & (starts < s + 400)).sum()
    )
    sl = slice(best, best + 400)
    plt = pyplot()
    fig, axes = plt.subplots(1 + len(methods), 1, figsize=(10, 2 + 1.2 * len(methods)), sharex=True)
    t = np.arange(len(labels))[sl]
    for c in range(test.shape[1]):
        style = "-" if d["is_dom"][c] else ":"
        axes[0].plot(t, test[sl, c] + 3 * c, style, lw=0.7)
    axes[0].set_title("test channels (solid: assigned dominant); shaded: true anomalies")
    for ax, m in zip(axes, ["channels", *methods]):
        ax.fill_between(
            t,
            0,
            1,
            where=labels[sl] == 1,
            color="red",
            alpha=0.2,
            transform=ax.get_xaxis_transform(),
        )
        if m != "channels":
            ax.plot(t, d[m][sl], lw=0.8)
            ax.set_ylabel(m, fontsize=8)
    path = out_dir / "score_window.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]
