"""Frozen-feature evaluation: a logistic-regression linear probe and a cosine kNN classifier.

Both take features as given (normalize them first where the protocol says so) and a fixed
train/test split, and return test accuracy. `linear_probe_accuracy` chooses the inverse
regularization C on a seeded validation share of the training rows, then refits on all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def l2_normalize(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows of x [n, d] scaled to unit L2 norm (a zero row stays zero)."""
    x = np.asarray(x, np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), eps)


def linear_probe_accuracy(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    cs: Sequence[float] = (0.1, 1.0, 10.0, 100.0),
    val_fraction: float = 0.2,
    seed: int = 0,
    max_iter: int = 1000,
) -> float:
    """Multinomial logistic regression (scikit-learn, lbfgs) on x [n, d] -> test accuracy.

    C is picked from `cs` by accuracy on a seeded `val_fraction` of the training rows (the first
    of equal ones: the strongest regularization), then the probe is refit on every training row.
    With one C, or fewer than 2 classes left in the fit share, that choice is skipped.
    """
    x_train, x_test = np.asarray(x_train, np.float64), np.asarray(x_test, np.float64)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise ValueError("features and labels differ in length")
    best_c = cs[0]
    if len(cs) > 1:
        perm = np.random.default_rng(seed).permutation(len(x_train))
        n_val = max(1, int(round(val_fraction * len(x_train))))
        val, fit = perm[:n_val], perm[n_val:]
        if len(np.unique(y_train[fit])) >= 2:
            scores = [_fit(x_train[fit], y_train[fit], c, max_iter).score(x_train[val],
                                                                          y_train[val])
                      for c in cs]  # fmt: skip
            best_c = cs[int(np.argmax(scores))]
    return float(_fit(x_train, y_train, best_c, max_iter).score(x_test, y_test))


def _fit(x: np.ndarray, y: np.ndarray, c: float, max_iter: int):
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        raise ValueError("a linear probe needs at least two classes in its training rows")
    with warnings.catch_warnings():
        # a probe that needs more iterations is still a probe: its accuracy is what we report
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=c, max_iter=max_iter).fit(x, y)


def knn_predict(
    x_train: np.ndarray, y_train: np.ndarray, x_query: np.ndarray, k: int = 20
) -> np.ndarray:
    """Majority vote of the k training rows of highest cosine similarity to each query.

    Ties between classes go to the class whose tied neighbours have the larger summed similarity
    (each class's similarity sum, divided by 2k + 2, lies in (-1/2, 1/2): it never outweighs a
    whole vote). Queries are processed in chunks, so n_train x n_query need not fit in memory.
    """
    if not 1 <= k <= len(x_train):
        raise ValueError(f"k={k} must lie in 1..{len(x_train)} (the training rows)")
    train = l2_normalize(x_train)
    classes, y_idx = np.unique(np.asarray(y_train), return_inverse=True)
    out = []
    for start in range(0, len(x_query), 1024):
        sim = l2_normalize(x_query[start : start + 1024]) @ train.T  # [q, n]
        nn = np.argpartition(-sim, k - 1, axis=1)[:, :k]  # [q, k], any order
        s_nn = np.take_along_axis(sim, nn, 1)
        votes = np.zeros((len(sim), len(classes)))
        rows = np.repeat(np.arange(len(sim)), k)
        np.add.at(votes, (rows, y_idx[nn].ravel()), 1.0 + s_nn.ravel() / (2 * k + 2))
        out.append(classes[votes.argmax(1)])
    return np.concatenate(out) if out else np.asarray([], classes.dtype)


def knn_accuracy(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, k: int = 20
) -> float:
    """Test accuracy of `knn_predict` (cosine similarity, k neighbours, majority vote)."""
    return float(np.mean(knn_predict(x_train, y_train, x_test, k) == np.asarray(y_test)))
