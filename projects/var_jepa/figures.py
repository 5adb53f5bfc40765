"""Figures written next to the tables by `launch/reproduce.py`."""

from __future__ import annotations

import json
import pathlib

from shared.results import pyplot, save_figure
from shared.tables import Table, overrides_for


def collapse_monitor(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Variance of the target embeddings over the batch during pretraining, per diagnostics row
    (first column's runs, every seed): T-JEPA with and without [REG], and Var-T-JEPA."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    column = table.sections[0].columns[0]
    for row, color in zip(table.rows, ("tab:blue", "tab:orange", "tab:green"), strict=False):
        for i, seed in enumerate(table.seeds):
            log = workdirs[(overrides_for(row, column), seed)] / "metrics.jsonl"
            records = [json.loads(line) for line in log.read_text().splitlines()]
            points = sorted(
                {
                    r["step"]: r["target_emb_var"]
                    for r in records
                    if r.get("phase") == row.prefix and "target_emb_var" in r
                }.items()
            )
            ax.plot(
                *zip(*points, strict=True),
                color=color,
                alpha=0.8,
                label=row.label if i == 0 else None,
            )
    ax.set_yscale("log")
    ax.set_xlabel("pretraining step")
    ax.set_ylabel("mean per-dimension variance\nof target embeddings (batch)")
    ax.set_title("Collapse monitor (synthetic table, one line per seed)")
    ax.legend(fontsize=8)
    path = out_dir / f"{table.name}_collapse_monitor.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]


def latent_uncertainty(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Var-T-JEPA's mean posterior σ per feature of the synthetic table, mean ± std over seeds,
    the noise-injected columns in red (the uncertainty check of the diagnostics table)."""
    import numpy as np

    from shared.data.tabular import make_synthetic

    row = next(r for r in table.rows if r.prefix == "var_tjepa")
    column = table.sections[0].columns[0]
    per_seed = [
        json.loads(
            (workdirs[(overrides_for(row, column), s)] / "sigma_per_feature.json").read_text()
        )
        for s in table.seeds
    ]
    reference = make_synthetic(n=64)  # the diagnostics runs use the generator's defaults
    names = list(reference.feature_names)
    sigma = np.array([[run[n] for n in names] for run in per_seed])
    noisy = {reference.feature_names[j] for j in reference.noise_features}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.3 * len(names)), 3))
    ax.bar(
        range(len(names)),
        sigma.mean(0),
        yerr=sigma.std(0, ddof=1) if len(per_seed) > 1 else None,
        color=["tab:red" if n in noisy else "tab:blue" for n in names],
    )
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
    ax.set_ylim(0.8 * sigma.min(), 1.02 * sigma.max())
    ax.set_ylabel("mean posterior σ")
    ax.set_title(f"Var-T-JEPA latent uncertainty, {len(per_seed)} seeds (red: noise-injected)")
    path = out_dir / f"{table.name}_latent_uncertainty.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]


def diagnostics(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    return collapse_monitor(table, workdirs, out_dir) + latent_uncertainty(table, workdirs, out_dir)
