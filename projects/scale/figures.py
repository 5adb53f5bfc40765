"""Figures and the LR-sweep table of the main table's runs (called by launch/reproduce.py)."""

from __future__ import annotations

import json
import math
import pathlib

import numpy as np

from shared.results import pyplot, save_figure


def _curves(table, workdirs: dict) -> dict[str, list[dict]]:
    """Row label -> the curve.json of each seed's run."""
    from shared.tables import overrides_for

    out: dict[str, list[dict]] = {}
    for row in table.rows:
        for sec in table.sections[:1]:
            for col in sec.columns[:1]:
                for seed in table.seeds:
                    w = workdirs.get((overrides_for(row, col), seed))
                    if w is not None and (w / "curve.json").exists():
                        curve = json.loads((w / "curve.json").read_text())
                        curve["results"] = json.loads((w / "results.json").read_text())
                        out.setdefault(row.label, []).append(curve)
    return out


def write_sweep_table(table, curves: dict[str, list[dict]], path: pathlib.Path) -> None:
    """sweep.md: every grid point's validation loss per optimizer and the chosen LR."""
    lines = [
        f"# Peak-LR sweep of `{table.name}` (seed 0, {_sweep_steps(curves)} steps; validation loss "
        "in nats, lower is better)",
        "",
        "| optimizer | LR: val loss | chosen |",
        "|---|---|---|",
    ]
    for label, runs in curves.items():
        sweep = runs[0].get("sweep", {})
        chosen = next(v for k, v in runs[0]["results"].items() if k.endswith("/lr"))
        cells = ", ".join(f"{lr}: {loss:.4f}" for lr, loss in sweep.items())
        lines.append(f"| {label} | {cells or '–'} | {chosen:.4g} |")
    lines += [
        "",
        "The grid is 3 log-spaced values (x3.16); while the best sits at an edge, one more value "
        "past it is tried (once for `cpu`, up to twice for `long`). The sweep uses one seed and "
        "fewer steps than the reported runs (half for `cpu`, a tenth for `long`).",
    ]  # the footer is the table's (shared.table_writer stamps it)
    path.write_text("\n".join(lines) + "\n")


def _sweep_steps(curves: dict[str, list[dict]]) -> int | str:
    return next((r[0]["sweep_steps"] for r in curves.values() if "sweep_steps" in r[0]), "?")


def main_figures(table, workdirs: dict, out: pathlib.Path) -> list[pathlib.Path]:
    """Loss curves, state memory and sweep.md of `main`; the same files with the table's name
    as prefix for the others (`main_long_...`)."""
    plt = pyplot()
    stem = "" if table.name == "main" else f"{table.name}_"
    curves = _curves(table, workdirs)
    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, runs in curves.items():
        per_step = runs[0]["tokens_per_step"]
        steps = np.asarray(runs[0]["step"])
        losses = np.asarray([r["val_loss"] for r in runs])
        mean = losses.mean(0)
        ax.plot(steps * per_step / 1e3, mean, marker="o", ms=3, label=label)
        if len(runs) > 1:
            sd = losses.std(0, ddof=1)
            ax.fill_between(steps * per_step / 1e3, mean - sd, mean + sd, alpha=0.15)
    ax.set_xlabel("training tokens (thousands)")
    ax.set_ylabel("validation loss (nats / byte)")
    ax.set_title("Validation loss vs tokens (mean ± sd over seeds)")
    finite = [r["val_loss"][-1] for runs in curves.values() for r in runs]
    if finite:
        ax.set_ylim(min(finite) - 0.1, min(max(finite) + 0.6, min(finite) + 2.5))
    ax.legend(fontsize=7)
    path = out / f"{stem}val_loss_vs_tokens.png"
    save_figure(fig, path)
    written.append(path)

    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = list(curves)
    state = [
        next(v for k, v in curves[lab][0]["results"].items() if k.endswith("/state_mb"))
        for lab in labels
    ]
    ax.bar(range(len(labels)), [s * 1e3 for s in state])
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("optimizer state (kB, float32)")
    ax.set_title("Optimizer-state memory of the trained model")
    path = out / f"{stem}state_memory.png"
    save_figure(fig, path)
    written.append(path)

    path = out / f"{stem}sweep.md"
    write_sweep_table(table, curves, path)
    written.append(path)
    assert all(math.isfinite(s) for s in state)
    return written
