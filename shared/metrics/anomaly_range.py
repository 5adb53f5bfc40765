"""Range-AUC-ROC/PR and VUS-ROC/PR (Paparrizos et al., PVLDB 2022, "Volume Under the Surface";
reference `bogireddytejareddy/VUS`, PyPI `vus`).

Definitions (one buffer length `window` = l):
- Soft labels: each anomaly range [s, e] (inclusive indices) gets a buffer of l // 2 points on each
  side, valued sqrt(1 - d / l) at distance d from the range; overlapping buffers add; clipped to 1.
- P = number of anomalous points of the original labels; P_l = (P + sum(soft labels)) / 2.
- Thresholds: the scores sorted descending, taken at indices linspace(0, T - 1, n_thresholds) cast
  to int (the reference's 250 thresholds); pred = score >= threshold.
- TP = sum(soft * pred); existence = fraction of positive runs of the soft labels that hold a
  predicted point; TPR = min(TP / P_l, 1) * existence; FPR = (#pred - TP) / (T - P_l);
  precision = TP / #pred.
- Range-AUC-ROC: trapezoid area under (FPR, TPR) from (0, 0), through the thresholds, to (1, 1).
  Range-AUC-PR: area under precision over TPR from (TPR 0, precision 1) through the thresholds
  (the closing (1, 1) point is not part of the PR curve), trapezoid or step heights.
- VUS-ROC / VUS-PR: mean of the range-AUCs over l = 0, 1, ..., max_window.

The reference's two code paths differ, so `convention` picks one:
- "range_auc" (default): the definitions above, as `metricor.RangeAUC` (trapezoid PR); VUS is then
  exactly the mean of Range-AUCs. Existence counts positive runs of the soft labels.
- "vus_opt": as `metricor.RangeAUC_volume_opt`, which `vus.metrics.get_metrics(metric='vus')` runs:
  P_l = (2 P + soft mass of the *predicted* buffer points) / 2 (so it moves with the threshold),
  ranges merge for the existence ratio only when last_i + l // 2 >= start_{i+1} - l // 2, and PR
  uses step heights (precision at the right end).
Both were cross-checked against vus 0.0.6 (PyPI) to 1e-15 on random series (see the tests).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from shared.metrics.anomaly_pointwise import as_binary, check_same_length, segments


class RangeAUC(NamedTuple):
    roc: float
    pr: float


def soft_labels(labels: np.ndarray, window: int) -> np.ndarray:
    """Labels [T] in {0, 1} with sqrt-shaped buffers of window // 2 points per side, float64 [T]."""
    y = as_binary(labels, "labels")
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    out = y.astype(np.float64)
    half, n = window // 2, len(y)
    for start, stop in segments(y):
        last = stop - 1
        after = np.arange(last + 1, min(last + half + 1, n))
        out[after] += np.sqrt(1.0 - (after - last) / window)
        before = np.arange(max(start - half, 0), start)
        out[before] += np.sqrt(1.0 - (start - before) / window)
    return np.minimum(out, 1.0)


def _check_inputs(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = as_binary(labels, "labels")
    s = np.asarray(scores, np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D over time steps, got shape {s.shape}")
    check_same_length(y, s, "labels", "scores")
    if not np.isfinite(s).all():
        raise ValueError("scores contain NaN or inf")
    if not y.any():
        raise ValueError("range-AUC / VUS need at least one anomaly in labels")
    if y.all():
        raise ValueError("range-AUC / VUS need at least one normal point in labels")
    return y, s


Convention = Literal["range_auc", "vus_opt"]


def _existence_runs(y: np.ndarray, soft: np.ndarray, window: int, convention: Convention):
    """Index ranges [start, stop) over which the existence ratio looks for a predicted point."""
    if convention == "range_auc":  # positive runs of the soft labels (reference `RangeAUC`)
        return segments(soft > 0)
    # `RangeAUC_volume_opt` (`new_sequence`): ranges widened by window // 2 per side, merged only
    # when the widened inclusive ends overlap: last_i + half >= start_{i+1} - half.
    half, n = window // 2, len(y)
    runs: list[list[int]] = []
    for start, stop in segments(y):
        if runs and runs[-1][1] - 1 + half >= start - half:
            runs[-1][1] = stop
        else:
            runs.append([start, stop])
    return [(max(a - half, 0), min(b + half, n)) for a, b in runs]


def range_curves(
    labels: np.ndarray,
    scores: np.ndarray,
    window: int,
    n_thresholds: int | None = 250,
    convention: Convention = "range_auc",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Range-based (TPR, FPR, precision) at each threshold, each float64 [K].

    labels: [T] in {0, 1} with at least one anomaly and one normal point; scores: [T].
    n_thresholds: K as in the reference (250); None uses every sorted score (K = T).
    convention: "range_auc" (the paper; reference `RangeAUC`) or "vus_opt" (reference
    `RangeAUC_volume_opt`, see the module docstring).
    """
    if convention not in ("range_auc", "vus_opt"):
        raise ValueError(f"convention must be 'range_auc' or 'vus_opt', got {convention!r}")
    y, s = _check_inputs(labels, scores)
    n = len(s)
    order = np.argsort(-s, kind="stable")
    s_desc = s[order]
    idx = np.arange(n) if n_thresholds is None else np.linspace(0, n - 1, n_thresholds).astype(int)
    thresholds = s_desc[idx]
    # #points with score >= threshold (ties included), via the descending sort.
    n_pred = np.searchsorted(-s_desc, -thresholds, side="right")
    soft = soft_labels(y, window)
    tp = np.cumsum(soft[order])[n_pred - 1]
    runs = _existence_runs(y, soft, window, convention)
    run_max = np.array([s[a:b].max() for a, b in runs])
    existence = (run_max[None, :] >= thresholds[:, None]).sum(axis=1) / len(runs)
    n_true = float(y.sum())
    if convention == "range_auc":
        p_l = (n_true + soft.sum()) / 2.0
    else:  # the volume code counts only the buffer mass that is predicted
        p_l = (2.0 * n_true + np.cumsum((soft - y)[order])[n_pred - 1]) / 2.0
    tpr = np.minimum(tp / p_l, 1.0) * existence
    fpr = (n_pred - tp) / (n - p_l)
    precision = tp / n_pred
    return tpr, fpr, precision


def range_auc(
    labels: np.ndarray,
    scores: np.ndarray,
    window: int,
    n_thresholds: int | None = 250,
    convention: Convention = "range_auc",
) -> RangeAUC:
    """Range-AUC-ROC and Range-AUC-PR for one buffer length `window` (reference `RangeAUC`).

    labels: [T] in {0, 1}; scores: [T] (higher = more anomalous). window = 0 gives point labels.
    PR heights are trapezoids for "range_auc" and steps for "vus_opt", as in each reference path.
    """
    tpr, fpr, precision = range_curves(labels, scores, window, n_thresholds, convention)
    tpr_c = np.concatenate([[0.0], tpr, [1.0]])
    fpr_c = np.concatenate([[0.0], fpr, [1.0]])
    roc = np.sum(np.diff(fpr_c) * (tpr_c[1:] + tpr_c[:-1]) / 2.0)
    prec_c = np.concatenate([[1.0], precision])
    widths = np.diff(tpr_c[:-1])
    if convention == "range_auc":
        heights = (prec_c[1:] + prec_c[:-1]) / 2.0
    else:
        heights = prec_c[1:]
    return RangeAUC(float(roc), float(np.sum(widths * heights)))


def vus(
    labels: np.ndarray,
    scores: np.ndarray,
    max_window: int,
    n_thresholds: int | None = 250,
    convention: Convention = "range_auc",
) -> RangeAUC:
    """VUS-ROC and VUS-PR: range-AUCs averaged over window = 0, 1, ..., max_window.

    labels: [T] in {0, 1}; scores: [T]. max_window is the reference's `slidingWindow` argument of
    `get_metrics`. convention "vus_opt" reproduces `vus.metrics.get_metrics(metric='vus')`.
    """
    if max_window < 0:
        raise ValueError(f"max_window must be >= 0, got {max_window}")
    aucs = [range_auc(labels, scores, w, n_thresholds, convention) for w in range(max_window + 1)]
    return RangeAUC(float(np.mean([a.roc for a in aucs])), float(np.mean([a.pr for a in aucs])))
