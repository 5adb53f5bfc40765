import numpy as np

from shared.metrics.regression import rmse
from shared.train.supervised import HeadConfig, fit_head


def test_linear_regression_head_matches_least_squares_on_unscaled_targets():
    # diabetes-like scale: targets around 150 with std ~50; the head must still converge.
    rng = np.random.default_rng(0)
    w = rng.standard_normal(5)
    x = rng.standard_normal((1500, 5)).astype(np.float32)
    y = (150 + 20 * x @ w + 5 * rng.standard_normal(1500)).astype(np.float32)
    tr, va, te = slice(0, 1000), slice(1000, 1250), slice(1250, None)
    predict = fit_head(
        x[tr], y[tr], x[va], y[va], num_outputs=1, regression=True, cfg=HeadConfig(), seed=0
    )
    design = np.c_[x, np.ones(len(x))]
    coef = np.linalg.lstsq(design[tr], y[tr], rcond=None)[0]
    ols = rmse(y[te], design[te] @ coef)
    ours = rmse(y[te], predict(x[te]))
    assert ols < 6 and ours < 1.1 * ols, (ours, ols)


def test_classification_head_learns_a_separable_problem():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((600, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int32)
    predict = fit_head(
        x[:400],
        y[:400],
        x[400:500],
        y[400:500],
        num_outputs=2,
        regression=False,
        cfg=HeadConfig(hidden=(16,)),
        seed=0,
    )
    assert np.mean(predict(x[500:]).argmax(1) == y[500:]) > 0.9
