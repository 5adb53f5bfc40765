"""shared/metrics/probes.py: the linear probe and the cosine kNN against hand-made cases and a
brute-force float64 reference."""

import numpy as np
import pytest

from shared.metrics.probes import knn_accuracy, knn_predict, l2_normalize, linear_probe_accuracy


def _clusters(rng, n, d, classes, spread):
    centres = rng.normal(size=(classes, d)) * 5
    y = np.arange(n) % classes
    return centres[y] + spread * rng.normal(size=(n, d)), y


def test_linear_probe_separates_separable_classes_and_is_at_chance_on_noise():
    rng = np.random.default_rng(0)
    x, y = _clusters(rng, 400, 8, 4, 0.3)
    assert linear_probe_accuracy(x[:300], y[:300], x[300:], y[300:]) == 1.0
    noise = rng.normal(size=(400, 8))
    acc = linear_probe_accuracy(noise[:300], y[:300], noise[300:], y[300:])
    assert acc < 0.45  # 4 classes: chance 0.25, 100 test rows
    # deterministic: the same call gives the same number
    assert acc == linear_probe_accuracy(noise[:300], y[:300], noise[300:], y[300:])


def test_linear_probe_names_bad_inputs():
    with pytest.raises(ValueError, match="two classes"):
        linear_probe_accuracy(np.ones((4, 2)), np.zeros(4), np.ones((2, 2)), np.zeros(2), cs=(1.0,))
    with pytest.raises(ValueError, match="length"):
        linear_probe_accuracy(np.ones((4, 2)), np.zeros(3), np.ones((2, 2)), np.zeros(2))


def _knn_reference(x_train, y_train, x_query, k):
    """Brute force in float64: full sort by cosine similarity, vote, ties by similarity sum."""
    a = x_train / np.linalg.norm(x_train, axis=1, keepdims=True)
    out = []
    for q in x_query / np.linalg.norm(x_query, axis=1, keepdims=True):
        sim = a @ q
        order = np.argsort(-sim, kind="stable")[:k]
        best = None
        for c in np.unique(y_train):
            members = order[y_train[order] == c]
            key = (len(members), sim[members].sum())
            if best is None or key > best[0]:
                best = (key, c)
        out.append(best[1])
    return np.array(out)


def test_knn_matches_a_brute_force_reference():
    rng = np.random.default_rng(1)
    x_train, x_query = rng.normal(size=(300, 6)), rng.normal(size=(50, 6))
    y_train = rng.integers(0, 5, 300)
    for k in (1, 4, 20):
        np.testing.assert_array_equal(
            knn_predict(x_train, y_train, x_query, k), _knn_reference(x_train, y_train, x_query, k)
        )


def test_knn_uses_cosine_not_euclidean_distance():
    # the query is far from class 1's point in Euclidean terms but points the same way
    x_train = np.array([[10.0, 0.0], [0.0, 0.1]])
    assert knn_predict(x_train, np.array([1, 0]), np.array([[0.1, 0.0]]), k=1)[0] == 1
    x, y = _clusters(np.random.default_rng(2), 200, 5, 3, 0.2)
    assert knn_accuracy(x[:150], y[:150], x[150:], y[150:], k=20) == 1.0
    with pytest.raises(ValueError, match="k=0"):
        knn_predict(x, y, x, k=0)


def test_l2_normalize_gives_unit_rows_and_keeps_zero_rows():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(l2_normalize(x), [[0.6, 0.8], [0.0, 0.0]])
