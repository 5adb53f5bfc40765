"""AUROC against scikit-learn, ProcessBench-style F1 on a hand-made confusion table, edge cases."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from projects.prm_biasbench import metrics


@pytest.mark.parametrize("seed", range(5))
def test_auroc_equals_sklearn_on_random_scores(seed):
    gen = np.random.default_rng(seed)
    n = int(gen.integers(5, 300))
    y = gen.integers(0, 2, n)
    y[:2] = [0, 1]
    scores = gen.normal(size=n)
    if seed % 2:  # heavy ties: scores on a coarse grid
        scores = np.round(scores, 0)
    assert metrics.auroc(y, scores) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)


def test_auroc_edge_cases():
    assert metrics.auroc([0, 1], [0.0, 1.0]) == 1.0  # perfect
    assert metrics.auroc([0, 1], [1.0, 0.0]) == 0.0  # inverted
    assert metrics.auroc([0, 0, 1, 1], [0.5] * 4) == 0.5  # all tied: chance
    assert metrics.auroc([0, 1, 1], [0.2, 0.2, 0.9]) == 0.75  # one tie counts one half
    with pytest.raises(ValueError, match="both classes"):
        metrics.auroc([1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="finite"):
        metrics.auroc([0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="0 \\(negative\\) or 1"):
        metrics.auroc([0, 2], [0.1, 0.2])
    with pytest.raises(ValueError, match="equal-length"):
        metrics.auroc([0, 1, 1], [0.1, 0.2])


def test_predicted_first_error():
    assert metrics.predicted_first_error(np.array([0.9, 0.4, 0.1])) == 1
    assert metrics.predicted_first_error(np.array([0.9, 0.5, 0.6])) == -1  # 0.5 is not below
    assert metrics.predicted_first_error(np.array([0.9, 0.7]), threshold=0.8) == 1


def test_processbench_f1_on_a_hand_made_table():
    # erroneous: first errors 1, 2, 0, 3 -> predicted 1 (hit), 3 (late), -1 (missed), 3 (hit)
    # correct: 4 solutions -> predicted -1, -1, -1, 0 (one false alarm)
    true = [1, 2, 0, 3, -1, -1, -1, -1]
    pred = [1, 3, -1, 3, -1, -1, -1, 0]
    out = metrics.processbench_f1(true, pred)
    assert out["acc_error"] == 0.5 and out["acc_correct"] == 0.75
    assert out["f1"] == pytest.approx(2 * 0.5 * 0.75 / 1.25, abs=1e-15)  # 0.6
    assert metrics.processbench_f1([0, -1], [-1, 0])["f1"] == 0.0  # both accuracies 0
    assert metrics.processbench_f1([2, -1], [2, -1])["f1"] == 1.0
    # flagging too early is a miss as much as flagging too late
    assert metrics.processbench_f1([2, -1], [1, -1])["acc_error"] == 0.0
    with pytest.raises(ValueError, match="erroneous and correct"):
        metrics.processbench_f1([-1, -1], [-1, -1])


def test_mean_delta_is_paired():
    assert metrics.mean_delta([0.5, 0.7], [0.4, 0.9]) == pytest.approx(-0.05, abs=1e-15)
    with pytest.raises(ValueError, match="paired"):
        metrics.mean_delta([0.5], [0.4, 0.9])
