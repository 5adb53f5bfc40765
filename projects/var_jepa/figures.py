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
