"""Tier-1 metrics in float64 NumPy (spec §2, Reconstruction there).

- AUROC of separating perturbed (positive) from clean (negative) solutions by a score; ties count
  one half (the Mann-Whitney statistic with average ranks, as `sklearn.metrics.roc_auc_score`).
- ProcessBench-style F1: the harmonic mean of the accuracy on erroneous solutions (the earliest
  step scored below the threshold is the labelled first error) and the accuracy on correct ones
  (no step scored below the threshold).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """P(score of a random positive > score of a random negative) + P(tie) / 2.

    Raises ValueError when a class is missing (the AUROC is undefined), the lengths differ, a
    label is not 0/1 or a score is not finite."""
    y = np.asarray(labels)
    s = np.asarray(scores, np.float64)
    if y.shape != s.shape or y.ndim != 1:
        raise ValueError(f"labels {y.shape} and scores {s.shape} must be equal-length vectors")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 (negative) or 1 (positive)")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite")
    n_pos, n_neg = int(y.sum()), int((1 - y).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"AUROC needs both classes: {n_pos} positives, {n_neg} negatives")
    ranks = rankdata(s)  # average ranks for ties
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def predicted_first_error(scores: np.ndarray, threshold: float = 0.5) -> int:
    """Index of the first step scored below `threshold`; -1 when none is."""
    below = np.flatnonzero(np.asarray(scores) < threshold)
    return int(below[0]) if below.size else -1


def processbench_f1(true_first: Sequence[int], predicted_first: Sequence[int]) -> dict[str, float]:
    """true_first / predicted_first: the first wrong step of each solution, -1 for none.

    Returns acc_error (exact first-error match on the erroneous solutions), acc_correct (nothing
    flagged on the correct ones) and their harmonic mean f1 (0 when both are 0)."""
    t, p = np.asarray(true_first), np.asarray(predicted_first)
    if t.shape != p.shape or t.ndim != 1:
        raise ValueError(f"true {t.shape} and predicted {p.shape} must be equal-length vectors")
    err, ok = t >= 0, t < 0
    if not err.any() or not ok.any():
        raise ValueError(
            f"F1 needs erroneous and correct solutions: {int(err.sum())} and {int(ok.sum())}"
        )
    acc_error = float(np.mean(p[err] == t[err]))
    acc_correct = float(np.mean(p[ok] < 0))
    total = acc_error + acc_correct
    f1 = 2 * acc_error * acc_correct / total if total > 0 else 0.0
    return {"acc_error": acc_error, "acc_correct": acc_correct, "f1": f1}


def mean_delta(perturbed: Sequence[float], clean: Sequence[float]) -> float:
    """Mean paired difference perturbed - clean (same solutions, same order)."""
    a, b = np.asarray(perturbed, np.float64), np.asarray(clean, np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired scores differ in shape: {a.shape} vs {b.shape}")
    return float(np.mean(a - b))
