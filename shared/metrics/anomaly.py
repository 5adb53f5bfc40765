"""Time-series anomaly-detection metrics, one import for all of them.

- `anomaly_pointwise`: TSLib percentile threshold, point-wise P/R/F1, point adjustment (PA-F1).
- `anomaly_affiliation`: affiliation precision/recall/F1 (Huet et al., KDD 2022).
- `anomaly_range`: Range-AUC-ROC/PR and VUS-ROC/PR (Paparrizos et al., PVLDB 2022).
"""

from shared.metrics.anomaly_affiliation import affiliation_from_events, affiliation_prf1
from shared.metrics.anomaly_pointwise import (
    PRF1,
    pa_prf1,
    percentile_threshold,
    point_adjust,
    predict,
    prf1,
    segments,
    tslib_protocol,
)
from shared.metrics.anomaly_range import RangeAUC, range_auc, range_curves, soft_labels, vus

__all__ = [
    "PRF1",
    "RangeAUC",
    "affiliation_from_events",
    "affiliation_prf1",
    "pa_prf1",
    "percentile_threshold",
    "point_adjust",
    "predict",
    "prf1",
    "range_auc",
    "range_curves",
    "segments",
    "soft_labels",
    "tslib_protocol",
    "vus",
]
