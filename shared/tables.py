"""Declarations of the tables a project reproduces (read by `launch/reproduce.py`).

A cell (row, column) of a table is the mean ± std over `seeds` of the metric
`<row.prefix>/<column.metric>` from runs of `config` with the row's and the column's overrides.
Rows that share overrides share runs, so one run can fill several rows.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class Row:
    label: str
    prefix: str  # metric key prefix, e.g. "tjepa_mlp"
    overrides: tuple[tuple[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True)
class Column:
    label: str
    metric: str  # metric name after the prefix, e.g. "acc"
    overrides: tuple[tuple[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    columns: tuple[Column, ...]
    digits: int = 3


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    title: str
    config: str  # base config name
    seeds: tuple[int, ...]
    rows: tuple[Row, ...]
    sections: tuple[Section, ...]
    # the paper's (or the baseline paper's) numbers: (row label, column label) -> value
    paper: tuple[tuple[tuple[str, str], float], ...] = ()
    notes: tuple[str, ...] = ()

    def runs(self) -> list[tuple[tuple[str, ...], int]]:
        """Every distinct (overrides as 'key=value' strings, seed) this table needs."""
        out = []
        for s in self.seeds:
            for r in self.rows:
                for sec in self.sections:
                    for c in sec.columns:
                        key = (overrides_for(r, c), s)
                        if key not in out:
                            out.append(key)
        return out


def overrides_for(row: Row, column: Column) -> tuple[str, ...]:
    """The row's then the column's overrides as CLI strings (a later key wins)."""
    merged = dict(row.overrides)
    merged.update(dict(column.overrides))
    return tuple(f"{k}={v!r}" for k, v in sorted(merged.items()))
