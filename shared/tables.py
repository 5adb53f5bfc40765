"""Declarations of the tables a project reproduces (read by `launch/reproduce.py`).

A cell (row, column) of a table is the mean ± std over `seeds` of the metric
`<row.prefix>/<column.metric>` from runs of `config` with the row's and the column's overrides.
Rows that share overrides share runs, so one run can fill several rows. A table whose runs each
hold many cells (all seeds vectorized inside one run) gives `render` instead of sections.
Next to its tables a project declares its paper's claims and their verdicts at this scale
(`CLAIMS`), which RESULTS.md gathers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np


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
    higher_is_better: bool = True
    # False for quantities measured on a shared machine (throughput, wall time): shown, but
    # given no better/worse verdict, since load from other processes can decide the sign
    verdict: bool = True


@dataclasses.dataclass(frozen=True)
class Section:
    title: str
    columns: tuple[Column, ...]
    digits: int = 3
    # the paper's (or the baseline paper's) numbers for this section's metric:
    # (row label, column label) -> value
    paper: tuple[tuple[tuple[str, str], float], ...] = ()


@dataclasses.dataclass(frozen=True)
class Table:
    name: str
    title: str
    config: str  # base config name
    seeds: tuple[int, ...]
    rows: tuple[Row, ...]
    sections: tuple[Section, ...]
    # row pairs (a, b) whose comparison per column is written under each section
    compare: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()
    # (table, {(overrides, seed): run directory}) -> (markdown body, json); replaces sections
    render: Callable[[Table, dict], tuple[str, dict]] | None = dataclasses.field(
        default=None, compare=False
    )

    def runs(self) -> list[tuple[tuple[str, ...], int]]:
        """Every distinct (overrides as 'key=value' strings, seed) this table needs."""
        out = []
        for s in self.seeds:
            for r in self.rows:
                if not self.sections:  # a rendered table: one run per row and seed
                    key = (tuple(f"{k}={v!r}" for k, v in sorted(r.overrides)), s)
                    out += [key] if key not in out else []
                for sec in self.sections:
                    for c in sec.columns:
                        key = (overrides_for(r, c), s)
                        if key not in out:
                            out.append(key)
        return out


VERDICTS = ("holds", "partly", "does not hold", "not testable here")


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim of the paper and what this reproduction found at its scale."""

    claim: str  # the paper's claim, in one sentence
    verdict: str  # one of VERDICTS
    evidence: str  # where it shows: a table (and row), a figure, or why it cannot be tested

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"Claim.verdict={self.verdict!r}; choose one of {VERDICTS}")


def overrides_for(row: Row, column: Column) -> tuple[str, ...]:
    """The row's then the column's overrides as CLI strings (a later key wins)."""
    merged = dict(row.overrides)
    merged.update(dict(column.overrides))
    return tuple(f"{k}={v!r}" for k, v in sorted(merged.items()))


def compare_rows(
    a: str,
    b: str,
    columns: tuple[Column, ...],
    cells: dict[tuple[str, str], list[float]],
) -> str:
    """One sentence: the columns where row a beats row b by more than the larger of the two
    seed standard deviations, where it loses by that much, and where they are within it."""
    verdict: dict[str, list[str]] = {"better": [], "worse": [], "within one std": []}
    for c in columns:
        if not c.verdict:
            continue
        va, vb = cells.get((a, c.label), []), cells.get((b, c.label), [])
        if len(va) < 2 or len(vb) < 2:
            continue
        diff = float(np.mean(va) - np.mean(vb)) * (1 if c.higher_is_better else -1)
        tol = max(float(np.std(va, ddof=1)), float(np.std(vb, ddof=1)))
        key = "better" if diff > tol else "worse" if diff < -tol else "within one std"
        verdict[key].append(c.label)
    parts = [f"{k} on {', '.join(v)}" for k, v in verdict.items() if v]
    return f"{a} vs {b}: " + ("; ".join(parts) if parts else "nothing to compare") + "."


def md_table(header, rows) -> str:
    """A markdown table: the header, the separator, one line per row (cells through str)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
