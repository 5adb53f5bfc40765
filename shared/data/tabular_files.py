"""T-JEPA's six benchmark tables read from a local data directory (CSV or Parquet).

File format: `<data_dir>/<name>.csv` (or `.parquet`) with a header row; the label column and the
categorical columns are declared below; every other column must be numerical. These sets are not
available offline, so the `paper` configs point `data_dir` at a directory prepared beforehand.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib

import numpy as np

from shared.data.resolver import MissingDataError
from shared.data.tabular import (
    ADULT_COLUMNS,
    ADULT_NUMERICAL,
    TabularData,
    Task,
    _encode_categories,
)


@dataclasses.dataclass(frozen=True)
class BenchmarkSpec:
    task: Task
    target: str = "target"
    categorical: tuple[str, ...] = ()


# From T-JEPA's `src/datasets/*.py` (task types); column conventions are ours.
BENCHMARKS: dict[str, BenchmarkSpec] = {
    "adult": BenchmarkSpec(
        "binary", "income", tuple(c for c in ADULT_COLUMNS if c not in ADULT_NUMERICAL)
    ),
    "helena": BenchmarkSpec("multiclass"),
    "jannis": BenchmarkSpec("multiclass"),
    "aloi": BenchmarkSpec("multiclass"),
    "california": BenchmarkSpec("regression"),
    "higgs": BenchmarkSpec("binary"),
}


def _read_table(path: pathlib.Path) -> tuple[list[str], list[list[str]]]:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as e:
            raise MissingDataError(f"reading {path.name} needs pyarrow: pip install pyarrow") from e
        table = pq.read_table(path)
        header = table.column_names
        cols = [[str(v) for v in table.column(c).to_pylist()] for c in header]
        return header, [list(r) for r in zip(*cols)]
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        raise ValueError(f"{path} is empty; expected a header row and data rows")
    return [h.strip() for h in rows[0]], [r for r in rows[1:] if r]


def load_benchmark(name: str, data_dir: str | pathlib.Path | None) -> TabularData:
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark '{name}'; choose one of {list(BENCHMARKS)}")
    if not data_dir:
        raise MissingDataError(
            f"benchmark '{name}' is read from a local directory: set "
            "data.data_dir=<dir holding {name}.csv>"
        )
    spec = BENCHMARKS[name]
    base = pathlib.Path(data_dir)
    path = next((p for p in (base / f"{name}.csv", base / f"{name}.parquet") if p.exists()), None)
    if path is None:
        raise MissingDataError(
            f"no {name}.csv or {name}.parquet in data directory '{base}'; "
            f"expected a header row with a '{spec.target}' label column"
        )
    header, rows = _read_table(path)
    missing = [c for c in (spec.target, *spec.categorical) if c not in header]
    if missing:
        raise ValueError(f"{path.name}: missing column(s) {missing}; the header has {header}")
    for i, r in enumerate(rows):
        if len(r) != len(header):
            raise ValueError(
                f"{path.name} row {i + 2} has {len(r)} fields, header has {len(header)}"
            )
    cols = {h: [r[i].strip() for r in rows] for i, h in enumerate(header)}
    num_names = tuple(h for h in header if h != spec.target and h not in spec.categorical)
    x_num = np.zeros((len(rows), len(num_names)), np.float32)
    for j, h in enumerate(num_names):
        try:
            x_num[:, j] = [float(v) for v in cols[h]]
        except ValueError as e:
            raise ValueError(
                f"{path.name}: column '{h}' must be numerical ({e}); declare it "
                f"categorical in BENCHMARKS['{name}'] if it is"
            ) from e
    x_cat, cards = _encode_categories([cols[h] for h in spec.categorical])
    if not spec.categorical:
        x_cat = np.zeros((len(rows), 0), np.int32)
    labels = cols[spec.target]
    if spec.task == "regression":
        y = np.array([float(v) for v in labels], np.float32)
    else:
        classes = sorted(set(labels))
        y = np.array([classes.index(v) for v in labels], np.int32)
    return TabularData(name, spec.task, x_num, x_cat, cards, y, num_names + spec.categorical)
