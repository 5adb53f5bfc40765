"""Affiliation precision/recall/F1 (Huet, Navarro, Rossi, KDD 2022, "Local Evaluation of Time Series
Anomaly Detection Algorithms"; reference package `affiliation`, `metrics.pr_from_events`).

Written from the paper's definitions, with every integral in closed form:
- Events are half-open real intervals [start, stop); a binary vector with a 1 at index i marks
  [i, i+1), and the series covers t_range = (0, T).
- Ground-truth events gt_1 < ... < gt_J split t_range into affiliation zones I_j: the points closer
  to gt_j than to any other gt event (cuts at the midpoints of the gaps between consecutive events).
- Within I_j, Y_j = predicted events intersected with I_j.
- Individual precision: mean over y in Y_j of the survival P(dist(X, gt_j) >= dist(y, gt_j)),
  X uniform on I_j; undefined (NaN) when Y_j is empty.
- Individual recall: mean over x in gt_j of P(|x - Y| >= dist(x, Y_j)), Y uniform on I_j; 0 when
  Y_j is empty.
- Precision = mean of the defined individual precisions; recall = mean over all zones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shared.metrics.anomaly_pointwise import PRF1, as_binary, check_same_length, segments

Interval = tuple[float, float]


def _int_positive_part(h0: float, h1: float, length: float) -> float:
    """Exact integral over an interval of `length` of max(h, 0), h linear from h0 to h1."""
    if h0 >= 0 and h1 >= 0:
        return 0.5 * (h0 + h1) * length
    if h0 <= 0 and h1 <= 0:
        return 0.0
    top = max(h0, h1)
    return length * top * top / (2.0 * (abs(h0) + abs(h1)))


def _dist_to_interval(x: float, interval: Interval) -> float:
    a, b = interval
    return max(a - x, 0.0, x - b)


def _dist_to_union(x: float, pieces: Sequence[Interval]) -> float:
    return min(_dist_to_interval(x, p) for p in pieces)


def _precision_in_zone(gt: Interval, zone: Interval, pieces: Sequence[Interval]) -> float:
    """Individual precision of one zone; pieces are the predicted intervals inside the zone."""
    (a, b), (zs, ze) = gt, zone
    left, right, zone_len = a - zs, ze - b, ze - zs
    total, mass = 0.0, 0.0
    for u, v in pieces:
        mass += v - u
        # Split the piece where dist(y, gt) changes formula: at a and at b.
        cuts = sorted({u, v, *(c for c in (a, b) if u < c < v)})
        for y0, y1 in zip(cuts[:-1], cuts[1:]):
            if a <= y0 and y1 <= b:  # inside gt: distance 0, survival 1
                total += y1 - y0
                continue
            d0, d1 = _dist_to_interval(y0, gt), _dist_to_interval(y1, gt)
            # survival(d) = (max(left - d, 0) + max(right - d, 0)) / |zone|, linear in y here
            total += _int_positive_part(left - d0, left - d1, y1 - y0) / zone_len
            total += _int_positive_part(right - d0, right - d1, y1 - y0) / zone_len
    return total / mass


def _recall_in_zone(gt: Interval, zone: Interval, pieces: Sequence[Interval]) -> float:
    """Individual recall of one zone; pieces are the predicted intervals inside the zone."""
    (a, b), (zs, ze) = gt, zone
    zone_len = ze - zs
    # dist(x, Y_j) is linear between piece endpoints and midpoints of gaps between pieces.
    kinks = {a, b}
    for u, v in pieces:
        kinks.update((u, v))
    for (_, v), (u, _) in zip(pieces[:-1], pieces[1:]):
        kinks.add(0.5 * (v + u))
    xs = sorted(k for k in kinks if a <= k <= b)
    total = 0.0
    for x0, x1 in zip(xs[:-1], xs[1:]):
        d0, d1 = _dist_to_union(x0, pieces), _dist_to_union(x1, pieces)
        # survival at x of d: (max(x - d - zs, 0) + max(ze - x - d, 0)) / |zone|
        total += _int_positive_part(x0 - d0 - zs, x1 - d1 - zs, x1 - x0) / zone_len
        total += _int_positive_part(ze - x0 - d0, ze - x1 - d1, x1 - x0) / zone_len
    return total / (b - a)


def _check_events(events: Sequence[Interval], name: str, t_range: Interval) -> list[Interval]:
    out = [(float(s), float(e)) for s, e in events]
    for s, e in out:
        if not s < e:
            raise ValueError(f"{name}: event ({s}, {e}) must have start < stop")
        if s < t_range[0] or e > t_range[1]:
            raise ValueError(f"{name}: event ({s}, {e}) lies outside t_range {t_range}")
    for (_, e), (s, _) in zip(out[:-1], out[1:]):
        if not e < s:
            raise ValueError(f"{name}: events must be sorted and separated, got stop {e} >= {s}")
    return out


def affiliation_from_events(
    events_pred: Sequence[Interval], events_gt: Sequence[Interval], t_range: Interval
) -> PRF1:
    """Affiliation precision, recall, F1 from events (as `affiliation.metrics.pr_from_events`).

    events_pred, events_gt: sorted, separated half-open intervals [(start, stop), ...];
    events_gt must be non-empty. t_range: (t0, t1) containing every event.
    Precision is NaN when nothing is predicted (undefined, as in the reference); F1 is then NaN.
    """
    t_range = (float(t_range[0]), float(t_range[1]))
    gt = _check_events(events_gt, "events_gt", t_range)
    pred = _check_events(events_pred, "events_pred", t_range)
    if not gt:
        raise ValueError("affiliation metrics need at least one ground-truth anomaly event")
    cuts = [0.5 * (e + s) for (_, e), (s, _) in zip(gt[:-1], gt[1:])]
    zones = list(zip([t_range[0], *cuts], [*cuts, t_range[1]]))
    precisions, recalls = [], []
    for g, (zs, ze) in zip(gt, zones):
        pieces = [(max(s, zs), min(e, ze)) for s, e in pred if min(e, ze) > max(s, zs)]
        if not pieces:
            precisions.append(math.nan)
            recalls.append(0.0)
            continue
        precisions.append(_precision_in_zone(g, (zs, ze), pieces))
        recalls.append(_recall_in_zone(g, (zs, ze), pieces))
    defined = [p for p in precisions if not math.isnan(p)]
    precision = float(np.mean(defined)) if defined else math.nan
    recall = float(np.mean(recalls))
    if math.isnan(precision):
        f1 = math.nan
    else:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return PRF1(precision, recall, f1)


def affiliation_prf1(labels: np.ndarray, pred: np.ndarray) -> PRF1:
    """Affiliation precision, recall, F1 of binary vectors labels, pred: [T] in {0, 1}.

    Index i with value 1 is the event [i, i+1); runs merge into one event; t_range = (0, T), as the
    reference's `convert_vector_to_events` and the usual `Trange = (0, len(labels))`.
    labels must contain at least one anomaly.
    """
    y, p = as_binary(labels, "labels"), as_binary(pred, "pred")
    check_same_length(y, p, "labels", "pred")
    if not y.any():
        raise ValueError("affiliation metrics need at least one anomaly in labels")
    return affiliation_from_events(segments(p), segments(y), (0, len(y)))
