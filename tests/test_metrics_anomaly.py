"""Tests of shared.metrics.anomaly: hand-worked examples, invariances, and constants cross-checked
against the reference packages (vus 0.0.6 from PyPI, which ships `affiliation` as
`vus.affiliation`), run once in a throwaway directory; the references are not dependencies."""

import math

import numpy as np
import pytest

from shared.metrics.anomaly import (
    affiliation_from_events,
    affiliation_prf1,
    pa_prf1,
    percentile_threshold,
    point_adjust,
    predict,
    prf1,
    range_auc,
    segments,
    soft_labels,
    tslib_protocol,
    vus,
)

# Two true segments: [1, 3) and [5, 6).
Y8 = np.array([0, 1, 1, 0, 0, 1, 0, 0])
EXACT = 1e-12  # every value below is a short sum of float64 terms


def test_segments_are_half_open_runs():
    assert segments(Y8) == [(1, 3), (5, 6)]
    assert segments(np.array([1, 1, 0, 1])) == [(0, 2), (3, 4)]
    assert segments(np.zeros(3, int)) == []


# ---------------------------------------------------------------- point-wise (TSLib protocol)


def test_percentile_threshold_hand_worked():
    # energy = 0..9; 90th percentile, linear interpolation: position 0.9 * 9 = 8.1 -> 8.1
    thr = percentile_threshold(np.arange(5.0), np.arange(5.0, 10.0), anomaly_ratio=10.0)
    assert thr == pytest.approx(8.1, abs=EXACT)
    assert predict(np.arange(5.0, 10.0), thr).tolist() == [False] * 4 + [True]
    # strict '>': a score equal to the threshold is not predicted
    assert not predict(np.array([8.1]), 8.1)[0]


def test_prf1_and_point_adjust_hand_worked():
    pred = np.array([0, 1, 0, 0, 0, 0, 0, 1])
    # TP = 1 (index 1), #pred = 2, #true = 3: P = 1/2, R = 1/3, F1 = 2 TP / (#pred + #true) = 2/5
    assert prf1(Y8, pred) == pytest.approx((1 / 2, 1 / 3, 2 / 5), abs=EXACT)
    # segment [1, 3) is hit -> index 2 added; [5, 6) missed; the false alarm at 7 stays
    assert point_adjust(Y8, pred).astype(int).tolist() == [0, 1, 1, 0, 0, 0, 0, 1]
    # TP = 2, #pred = 3, #true = 3: P = R = F1 = 2/3
    assert pa_prf1(Y8, pred) == pytest.approx((2 / 3, 2 / 3, 2 / 3), abs=EXACT)
    # no prediction: every ratio 0 (scikit-learn zero_division=0)
    assert prf1(Y8, np.zeros(8, int)) == (0.0, 0.0, 0.0)
    assert pa_prf1(Y8, Y8) == (1.0, 1.0, 1.0)


def test_prf1_matches_sklearn_and_pa_never_lowers_f1():
    from sklearn.metrics import precision_recall_fscore_support

    rng = np.random.default_rng(0)
    for _ in range(20):
        y = (rng.random(200) < 0.1).astype(int)
        p = (rng.random(200) < 0.1).astype(int)
        ref = precision_recall_fscore_support(y, p, average="binary", zero_division=0)[:3]
        assert prf1(y, p) == pytest.approx(ref, abs=EXACT)
        assert pa_prf1(y, p).f1 >= prf1(y, p).f1
        assert pa_prf1(y, p).recall >= prf1(y, p).recall


def test_tslib_protocol_end_to_end():
    test_scores = np.array([0.0, 5.0, 0.5, 0.0, 0.0, 0.2, 0.0, 4.0])
    # energy = 5 train zeros + test: 13 values; 80th percentile at position 0.8 * 12 = 9.6 of
    # sorted [0 x9, 0.2, 0.5, 4, 5] -> 0.2 + 0.6 * (0.5 - 0.2) = 0.38; pred = {1, 2, 7}
    out = tslib_protocol(np.zeros(5), test_scores, Y8, anomaly_ratio=20.0)
    assert out["threshold"] == pytest.approx(0.38, abs=EXACT)
    # TP = 2 of 3 predicted, 2 of 3 true; PA adds nothing new ([1, 3) already whole)
    assert (out["precision"], out["recall"], out["f1"]) == pytest.approx((2 / 3,) * 3, abs=EXACT)
    assert out["pa_f1"] == pytest.approx(2 / 3, abs=EXACT)


def test_pointwise_invalid_inputs():
    with pytest.raises(ValueError, match="length"):
        prf1(Y8, np.zeros(7, int))
    with pytest.raises(ValueError, match="0/1"):
        point_adjust(Y8, np.full(8, 2))
    with pytest.raises(ValueError, match="anomaly_ratio"):
        percentile_threshold(np.zeros(3), np.zeros(3), 0.0)
    with pytest.raises(ValueError, match="NaN"):
        percentile_threshold(np.zeros(3), np.array([np.nan]), 1.0)


# ---------------------------------------------------------------- affiliation
# Events of Y8: gt [1, 3) and [5, 6); t_range (0, 8); zones cut at (3 + 5) / 2 = 4:
# I1 = [0, 4] (left margin 1, right margin 1), I2 = [4, 8] (left margin 1, right margin 2).


def test_affiliation_prediction_inside_first_event():
    # pred [1, 2). Zone 1: precision 1 (inside gt). Recall: x in [1, 2] distance 0 -> survival 1
    # (integral 1); x in [2, 3], d = x - 2, survival ((x - d) + (4 - x - d)) / 4 = (8 - 2x) / 4,
    # integral 0.75; mean over |gt| = 2: 0.875. Zone 2: nothing predicted -> recall 0, precision
    # undefined. P = 1, R = (0.875 + 0) / 2 = 0.4375.
    p, r, f1 = affiliation_prf1(Y8, np.array([0, 1, 0, 0, 0, 0, 0, 0]))
    assert (p, r) == pytest.approx((1.0, 0.4375), abs=EXACT)
    assert f1 == pytest.approx(2 * 0.4375 / 1.4375, abs=EXACT)


def test_affiliation_prediction_before_first_event():
    # pred [0, 1). Zone 1 precision: d = 1 - y, survival 2 max(1 - d, 0) / 4 = y / 2, mean 0.25.
    # Recall: D = x - 1, survival (1 + max(5 - 2x, 0)) / 4 over [1, 3]:
    #   (2 + 2.25) / 4 / 2 = 0.53125.
    # R = 0.53125 / 2 = 0.265625.
    p, r, _ = affiliation_prf1(Y8, np.array([1, 0, 0, 0, 0, 0, 0, 0]))
    assert (p, r) == pytest.approx((0.25, 0.265625), abs=EXACT)


def test_affiliation_two_late_predictions():
    # pred [3, 4) and [7, 8).
    # Zone 1: precision: d = y - 3 in [0, 1], survival (1 - d) / 2, mean 0.25.
    #   recall: D = 3 - x, survival (max(2x - 3, 0) + 1) / 4 over [1, 3]:
    #   (2 + 2.25) / 4 / 2 = 0.53125.
    # Zone 2 (gt [5, 6), zone [4, 8]): precision: d = y - 6 in [1, 2], survival (2 - d) / 4,
    #   mean 0.125. recall: D = 7 - x, survival (max(2x - 11, 0) + 1) / 4 over [5, 6]:
    #   (1 + 0.25) / 4 = 0.3125.
    # P = (0.25 + 0.125) / 2 = 0.1875, R = (0.53125 + 0.3125) / 2 = 0.421875.
    p, r, _ = affiliation_prf1(Y8, np.array([0, 0, 0, 1, 0, 0, 0, 1]))
    assert (p, r) == pytest.approx((0.1875, 0.421875), abs=EXACT)


def test_affiliation_all_predicted():
    # Zone 1: [1, 3] -> 2, [0, 1] and [3, 4] -> 0.25 each: 2.5 / 4 = 0.625.
    # Zone 2: [5, 6] -> 1; [4, 5]: (max(1 - d, 0) + (2 - d)) / 4 -> 0.5; [6, 8]: 0.5 + 2 over 4
    # -> 0.625; (1 + 0.5 + 0.625) / 4 = 0.53125. P = 0.578125; recall 1 (every gt point covered).
    p, r, _ = affiliation_prf1(Y8, np.ones(8, int))
    assert (p, r) == pytest.approx((0.578125, 1.0), abs=EXACT)


def test_affiliation_perfect_and_empty_prediction():
    assert affiliation_prf1(Y8, Y8) == pytest.approx((1.0, 1.0, 1.0), abs=EXACT)
    p, r, f1 = affiliation_prf1(Y8, np.zeros(8, int))
    assert math.isnan(p) and r == 0.0 and math.isnan(f1)  # precision undefined, as the reference


def test_affiliation_cross_checked_constants():
    # vus 0.0.6 `vus.affiliation.metrics.pr_from_events(convert_vector_to_events(pred),
    # convert_vector_to_events(y), (0, 40))` gave precision 0.562010582010582 and recall
    # 0.8587301587301588 (individual precisions 6/7, 0.57222..., 0.25666...); it also agreed
    # with this implementation to 4e-16 on 300 random vectors of length 5 to 80.
    y = np.zeros(40, int)
    y[5:8], y[20:22], y[33] = 1, 1, 1
    pred = (((np.arange(40) * 7) % 11) / 10 + 0.6 * y > 0.8).astype(int)
    p, r, _ = affiliation_prf1(y, pred)
    assert (p, r) == pytest.approx((0.562010582010582, 0.8587301587301588), abs=EXACT)
    # events with real-valued bounds
    p, r, _ = affiliation_from_events([(2.5, 3.0)], [(1.0, 3.0)], (0.0, 4.0))
    assert p == 1.0


def test_affiliation_invalid_inputs():
    with pytest.raises(ValueError, match="at least one anomaly"):
        affiliation_prf1(np.zeros(8, int), Y8)
    with pytest.raises(ValueError, match="length"):
        affiliation_prf1(Y8, Y8[:-1])
    with pytest.raises(ValueError, match="outside t_range"):
        affiliation_from_events([(0.0, 9.0)], [(1.0, 2.0)], (0.0, 8.0))


# ---------------------------------------------------------------- range-AUC and VUS
Y4 = np.array([0, 1, 0, 0])
S4 = np.array([0.1, 0.3, 0.2, 0.9])  # the anomaly ranks second of four


def test_soft_labels_hand_worked():
    # window 2: one buffer point per side at distance 1, sqrt(1 - 1/2)
    a = math.sqrt(0.5)
    assert soft_labels(Y4, 2) == pytest.approx([a, 1.0, a, 0.0], abs=EXACT)
    # window 5: two points per side, sqrt(1 - 1/5), sqrt(1 - 2/5); clipped at the series start
    s = soft_labels(np.array([0, 0, 0, 1, 0, 0, 0]), 5)
    b1, b2 = math.sqrt(0.8), math.sqrt(0.6)
    assert s == pytest.approx([0, b2, b1, 1, b1, b2, 0], abs=EXACT)
    # overlapping buffers add, then clip to 1
    assert soft_labels(np.array([1, 0, 1]), 2)[1] == 1.0
    assert soft_labels(Y4, 0).tolist() == Y4.tolist()


def test_range_auc_window_zero_hand_worked():
    # thresholds 0.9, 0.3, 0.2, 0.1 -> (FPR, TPR): (1/3, 0), (1/3, 1), (2/3, 1), (1, 1);
    # with (0, 0) and (1, 1) added, ROC area = 1/3 + 1/3 = 2/3 (= the ordinary AUC).
    # PR over TPR [0, 0, 1, 1, 1] with precision [1, 0, 1/2, 1/3, 1/4]: one unit step from
    # TPR 0 to 1 whose ends have precision 0 and 1/2: trapezoid 1/4.
    roc, pr = range_auc(Y4, S4, window=0, n_thresholds=None)
    assert (roc, pr) == pytest.approx((2 / 3, 1 / 4), abs=EXACT)
    # the volume code's step rule takes the right end's precision: 1/2
    assert range_auc(Y4, S4, 0, None, convention="vus_opt").pr == pytest.approx(0.5, abs=EXACT)
    # 250 reference thresholds on 4 points repeat the same 4 thresholds: same areas
    assert range_auc(Y4, S4, window=0) == pytest.approx((roc, pr), abs=EXACT)


def test_range_auc_and_vus_with_buffer_hand_worked():
    # window 2: soft [a, 1, a, 0], a = sqrt(1/2); P = 1, P_l = (1 + 1 + 2a) / 2 = 1 + a;
    # negatives T - P_l = 3 - a; one positive run [0, 3).
    # t=0.9: pred {3}: TP 0, TPR 0, FPR f1 = 1/(3-a)
    # t=0.3: pred {1, 3}: TP 1, TPR r = 1/(1+a), FPR f1
    # t=0.2: pred {1, 2, 3}: TP 1 + a, TPR 1, FPR f2 = (2 - a)/(3 - a)
    # t=0.1: all: TP 1 + 2a, TPR 1 (clipped), FPR f3 = (3 - 2a)/(3 - a)
    # ROC area = (f2 - f1)(r + 1)/2 + (1 - f2) = ((1 - a)(r + 1)/2 + 1)/(3 - a)
    a = math.sqrt(0.5)
    r = 1 / (1 + a)
    expected_roc = ((1 - a) * (r + 1) / 2 + 1) / (3 - a)
    # PR: TPR [0, 0, r, 1, 1], precision [1, 0, 1/2, (1+a)/3, (1+2a)/4]:
    # trapezoid r (0 + 1/2)/2 + (1 - r)(1/2 + (1 + a)/3)/2
    expected_pr = r / 4 + (1 - r) * (0.5 + (1 + a) / 3) / 2
    roc2, pr2 = range_auc(Y4, S4, window=2, n_thresholds=None)
    assert (roc2, pr2) == pytest.approx((expected_roc, expected_pr), abs=EXACT)
    # VUS over windows 0, 1, 2; window 1 has no buffer (1 // 2 = 0) so equals window 0
    v = vus(Y4, S4, max_window=2, n_thresholds=None)
    assert v.roc == pytest.approx((2 / 3 + 2 / 3 + expected_roc) / 3, abs=EXACT)
    assert v.pr == pytest.approx((1 / 4 + 1 / 4 + expected_pr) / 3, abs=EXACT)


def test_range_auc_and_vus_cross_checked_constants():
    # vus 0.0.6 (PyPI), `metricor` of `vus.utils.metrics`, on this series:
    #   RangeAUC(window=6) -> ROC 0.8399948170156546, PR 0.7193082585341459
    #   mean of RangeAUC over windows 0..8 -> 0.7941786374709557, 0.6283047527447996
    #   RangeAUC_volume_opt(windowSize=8, thre=250) (what get_metrics(metric='vus') runs)
    #     -> VUS-ROC 0.8727148316959019, VUS-PR 0.669703782244999
    # Both conventions also agreed with the reference to 3e-16 on 60 random series with ties.
    y = np.zeros(40, int)
    y[5:8], y[20:22], y[33] = 1, 1, 1
    s = ((np.arange(40) * 7) % 11) / 10 + 0.6 * y
    assert range_auc(y, s, 6) == pytest.approx((0.8399948170156546, 0.7193082585341459), abs=EXACT)
    assert vus(y, s, 8) == pytest.approx((0.7941786374709557, 0.6283047527447996), abs=EXACT)
    assert vus(y, s, 8, convention="vus_opt") == pytest.approx(
        (0.8727148316959019, 0.669703782244999), abs=EXACT
    )


def test_range_auc_invariances():
    rng = np.random.default_rng(0)
    y = np.zeros(2000, int)
    for start in (100, 700, 1500):
        y[start : start + 20] = 1
    # a perfect detector (anomalies score above everything) gets ROC 1 at window 0
    perfect = y + 0.1 * rng.random(2000)
    assert range_auc(y, perfect, 0, None).roc == pytest.approx(1.0, abs=EXACT)
    assert range_auc(y, perfect, 0, None).pr == pytest.approx(1.0, abs=EXACT)
    # a random score gives VUS-ROC near 0.5 on a long series
    noise = rng.random(2000)
    for convention in ("range_auc", "vus_opt"):
        assert abs(vus(y, noise, 20, convention=convention).roc - 0.5) < 0.1


def test_range_invalid_inputs():
    with pytest.raises(ValueError, match="at least one anomaly"):
        range_auc(np.zeros(5, int), np.arange(5.0), 2)
    with pytest.raises(ValueError, match="length"):
        vus(Y4, S4[:3], 2)
    with pytest.raises(ValueError, match="convention"):
        range_auc(Y4, S4, 2, convention="other")
    with pytest.raises(ValueError, match="max_window"):
        vus(Y4, S4, -1)
