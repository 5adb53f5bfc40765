"""Point-wise anomaly-detection metrics of the TSLib protocol: percentile threshold, P/R/F1, and
point adjustment (PA-F1).

Follows `thuml/Time-Series-Library` (`exp/exp_anomaly_detection.py`, `utils/tools.py::adjustment`):
threshold = percentile of train+test scores at 100 - anomaly_ratio, pred = score > threshold, then
point adjustment, then binary precision/recall/F1 (scikit-learn `average='binary'`, 0 on a zero
division). All arrays are 1-D over time steps: labels and preds in {0, 1}, scores float.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class PRF1(NamedTuple):
    precision: float
    recall: float
    f1: float


def as_binary(x: np.ndarray, name: str) -> np.ndarray:
    """Checks that x is a 1-D array of 0/1 (bool or numbers) and returns it as bool [T]."""
    x = np.asarray(x)
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D over time steps, got shape {x.shape}")
    if x.dtype != bool and not np.isin(x, (0, 1)).all():
        raise ValueError(f"{name} must contain only 0/1 values, got {np.unique(x)[:5]}...")
    return x.astype(bool)


def check_same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if len(a) != len(b):
        raise ValueError(f"{name_a} has length {len(a)} but {name_b} has length {len(b)}")


def segments(labels: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of ones of a binary vector [T] as half-open (start, stop) index pairs."""
    x = np.concatenate([[0], as_binary(labels, "labels").astype(np.int8), [0]])
    edges = np.flatnonzero(np.diff(x))
    return [(int(s), int(e)) for s, e in zip(edges[::2], edges[1::2])]


def percentile_threshold(
    train_scores: np.ndarray, test_scores: np.ndarray, anomaly_ratio: float
) -> float:
    """TSLib threshold: `np.percentile(concat(train, test), 100 - anomaly_ratio)`.

    train_scores: [T_train], test_scores: [T_test] (any shapes; flattened as TSLib does).
    anomaly_ratio: expected anomaly percentage in (0, 100), e.g. 1.0 for 1%.
    Predictions are then `test_scores > threshold` (strict, as TSLib).
    """
    if not 0.0 < anomaly_ratio < 100.0:
        raise ValueError(f"anomaly_ratio is a percentage in (0, 100), got {anomaly_ratio}")
    energy = np.concatenate(
        [np.asarray(train_scores, np.float64).ravel(), np.asarray(test_scores, np.float64).ravel()]
    )
    if energy.size == 0:
        raise ValueError("percentile_threshold needs at least one score")
    if not np.isfinite(energy).all():
        raise ValueError("scores contain NaN or inf; fix the model output before thresholding")
    return float(np.percentile(energy, 100.0 - anomaly_ratio))


def predict(scores: np.ndarray, threshold: float) -> np.ndarray:
    """Binary predictions [T] of TSLib: score > threshold (strict)."""
    return np.asarray(scores, np.float64) > threshold


def prf1(labels: np.ndarray, pred: np.ndarray) -> PRF1:
    """Binary precision, recall, F1 of the positive class (anomaly = 1).

    labels, pred: [T] in {0, 1}. Matches scikit-learn `precision_recall_fscore_support(
    labels, pred, average='binary')` with zero_division=0: an undefined ratio counts as 0.
    """
    y, p = as_binary(labels, "labels"), as_binary(pred, "pred")
    check_same_length(y, p, "labels", "pred")
    tp = float(np.sum(y & p))
    n_pred, n_true = float(p.sum()), float(y.sum())
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_true if n_true else 0.0
    f1 = 2 * tp / (n_pred + n_true) if n_pred + n_true else 0.0
    return PRF1(precision, recall, f1)


def point_adjust(labels: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """TSLib `adjustment`: every true anomaly segment with at least one predicted point becomes
    wholly predicted; predictions outside true segments are kept as they are.

    labels, pred: [T] in {0, 1}. Returns the adjusted predictions, bool [T] (inputs unchanged).
    """
    y, p = as_binary(labels, "labels"), as_binary(pred, "pred")
    check_same_length(y, p, "labels", "pred")
    adjusted = p.copy()
    for start, stop in segments(y):
        if p[start:stop].any():
            adjusted[start:stop] = True
    return adjusted


def pa_prf1(labels: np.ndarray, pred: np.ndarray) -> PRF1:
    """Precision, recall, F1 after point adjustment (PA-F1 is `.f1`). labels, pred: [T]."""
    return prf1(labels, point_adjust(labels, pred))


def tslib_protocol(
    train_scores: np.ndarray,
    test_scores: np.ndarray,
    test_labels: np.ndarray,
    anomaly_ratio: float,
) -> dict[str, float]:
    """The whole TSLib evaluation: threshold, point-wise and point-adjusted P/R/F1.

    Returns {"threshold", "precision", "recall", "f1", "pa_precision", "pa_recall", "pa_f1"}.
    """
    check_same_length(np.asarray(test_scores).ravel(), test_labels, "test_scores", "test_labels")
    threshold = percentile_threshold(train_scores, test_scores, anomaly_ratio)
    pred = predict(np.asarray(test_scores).ravel(), threshold)
    raw, adjusted = prf1(test_labels, pred), pa_prf1(test_labels, pred)
    return {
        "threshold": threshold,
        "precision": raw.precision,
        "recall": raw.recall,
        "f1": raw.f1,
        "pa_precision": adjusted.precision,
        "pa_recall": adjusted.recall,
        "pa_f1": adjusted.f1,
    }
