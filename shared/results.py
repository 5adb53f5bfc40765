"""Run directories, metric files, result tables (markdown + json) and plots."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import pathlib
import platform
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shared.provenance import git_revision

LIBRARIES = (
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "orbax-checkpoint",
    "grain",
    "chex",
    "numpy",
    "scikit-learn",
)


def library_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for lib in LIBRARIES:
        try:
            out[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            out[lib] = "absent"
    return out


def device_summary() -> str:
    import jax

    devs = jax.devices()
    kinds = sorted({d.device_kind for d in devs})
    where = f", {jax.process_count()} processes" if jax.process_count() > 1 else ""
    return f"{len(devs)}x {'/'.join(kinds)} ({jax.default_backend()}{where})"


def new_run_dir(root: pathlib.Path, project: str, config_name: str) -> pathlib.Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    path = root / project / config_name / stamp
    path.mkdir(parents=True, exist_ok=False)
    return path


def is_writer() -> bool:
    """Whether this process writes run files: always, but in a multi-process JAX run only
    process 0 (every process runs the same code; one copy of each file)."""
    if "jax" not in sys.modules:  # no JAX run in this process (a table or figure script)
        return True
    from shared.distributed import is_primary

    return is_primary()


def write_run_info(workdir: pathlib.Path, config_json: str, **extra: Any) -> None:
    """config.json plus run.json (revision, library versions, devices, start time, `extra`)."""
    if not is_writer():
        return
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.json").write_text(config_json + "\n")
    info = {
        "git_revision": git_revision(),
        "libraries": library_versions(),
        "devices": device_summary(),
        "cpu_count": os.cpu_count(),
        "started": datetime.datetime.now().isoformat(),
        **extra,
    }
    write_json(workdir / "run.json", info)


def update_run_info(workdir: pathlib.Path, **fields: Any) -> dict:
    """Adds `fields` to run.json (process 0 of a multi-process run, which alone reads it: the
    others could catch it half written); returns the record."""
    if not is_writer():
        return {}
    path = workdir / "run.json"
    info = json.loads(path.read_text()) if path.exists() else {}
    info.update(fields)
    write_json(path, info)
    return info


def write_json(path: pathlib.Path, data: Any) -> None:
    """`data` as indented JSON (by process 0 only in a multi-process run)."""
    if not is_writer():
        return
    tmp = path.with_name(f".{path.name}.tmp")  # then renamed: a reader never sees half a file
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def append_metrics(workdir: pathlib.Path, record: Mapping[str, Any]) -> None:
    """Adds a summary row to metrics.jsonl. A row is identified by its string fields (e.g.
    `{"phase": "tjepa"}`): a resumed run that redoes a unit of work replaces that unit's earlier
    row instead of adding a second one. A row with a "step" is appended as it is (readers of
    per-step rows keep the last row of a step). Process 0 only in a multi-process run."""
    if not is_writer():
        return
    path = workdir / "metrics.jsonl"
    ident = _identity(record)
    if ident is not None and path.exists():
        lines = path.read_text().splitlines()
        kept = [line for line in lines if _identity(json.loads(line)) != ident]
        if len(kept) != len(lines):
            path.write_text("".join(line + "\n" for line in kept))
    with open(path, "a") as f:
        f.write(json.dumps(dict(record)) + "\n")


def _identity(record: Mapping[str, Any]) -> tuple | None:
    if "step" in record:  # training-loop rows: the loop keeps those exact itself
        return None
    return tuple(sorted((k, v) for k, v in record.items() if isinstance(v, str)))


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    vals = np.asarray([v for v in values if v is not None and math.isfinite(v)], np.float64)
    if not len(vals):
        return math.nan, math.nan
    return float(vals.mean()), float(vals.std(ddof=1)) if len(vals) > 1 else 0.0


def format_cell(values: Sequence[float], digits: int = 3) -> str:
    """mean ± std over seeds; one value where every seed gave exactly the same number (bytes,
    a swept learning rate, a deterministic count), where a ± 0 would only be noise on the page."""
    if not values:
        return "–"
    m, s = mean_std(values)
    if len(values) == 1 or len(set(values)) == 1:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def render_table(
    *,
    title: str,
    rows: Sequence[str],
    columns: Sequence[str],
    cells: Mapping[tuple[str, str], Sequence[float]],
    paper: Mapping[tuple[str, str], float] | None = None,
    digits: int = 3,
) -> tuple[str, dict]:
    """A markdown section and its json: mean ± std over seeds per (row, column), with the
    paper's number beside ours as "ours (paper: x)" where one exists;
    "–" where nothing was measured."""
    paper = paper or {}
    lines = [
        f"## {title}",
        "",
        "| | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for r in rows:
        out = []
        for c in columns:
            cell = format_cell(cells.get((r, c), []), digits)
            if (r, c) in paper:
                cell += f" (paper: {paper[(r, c)]:.{digits}f})"
            out.append(cell)
        lines.append(f"| {r} | " + " | ".join(out) + " |")
    data = {
        "title": title,
        "rows": list(rows),
        "columns": list(columns),
        "cells": [
            {
                "row": r,
                "column": c,
                "values": list(cells.get((r, c), [])),
                "mean": mean_std(cells.get((r, c), []))[0],
                "std": mean_std(cells.get((r, c), []))[1],
                "n": len(cells.get((r, c), [])),
                "paper": paper.get((r, c)),
            }
            for r in rows
            for c in columns
        ],
    }
    return "\n".join(lines), data


def save_figure(fig: Any, path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def pyplot():
    """matplotlib.pyplot with the non-interactive backend (works headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
