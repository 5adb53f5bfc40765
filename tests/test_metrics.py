import numpy as np
import pytest
from sklearn.metrics import f1_score

from shared.metrics import accuracy, effective_rank, macro_f1, per_dimension_variance, rmse


def test_classification_metrics_match_sklearn():
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 4, 200), rng.integers(0, 5, 200)
    assert macro_f1(y, p) == pytest.approx(f1_score(y, p, average="macro"), abs=1e-12)
    assert accuracy(y, p) == pytest.approx(np.mean(y == p))
    assert rmse([0.0, 3.0], [4.0, 3.0]) == pytest.approx(np.sqrt(8.0))


def test_collapse_statistics_closed_forms():
    const = np.ones((50, 8))
    assert effective_rank(const) == 0.0
    assert per_dimension_variance(const).max() == 0.0
    rank_one = np.outer(np.arange(50.0), np.ones(8))
    assert effective_rank(rank_one) == pytest.approx(1.0, abs=1e-6)
    # centred orthonormal columns: all singular values equal -> effective rank = D
    x = np.random.default_rng(0).standard_normal((64, 8))
    u = np.linalg.svd(x - x.mean(0), full_matrices=False)[0]
    assert effective_rank(u) == pytest.approx(8.0, rel=1e-6)
    rand = np.random.default_rng(1).standard_normal((500, 8))
    assert 7.0 < effective_rank(rand) <= 8.0
    assert per_dimension_variance(rand).mean() == pytest.approx(1.0, abs=0.1)
