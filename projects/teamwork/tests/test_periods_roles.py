import numpy as np

from projects.teamwork.periods import fft_periods, score_masks, spans_from_periods, train_masks
from projects.teamwork.roles import assign_roles, role_scores, select_lag_order
from shared.data.timeseries_generator import make_benchmark


def test_fft_recovers_a_known_period_and_ignores_dc():
    t = np.arange(96)
    x = (5.0 + np.sin(2 * np.pi * t / 24))[None, :, None]  # large DC offset must not win
    assert fft_periods(x, 1).tolist() == [24]


def test_fft_recovers_the_generator_periods():
    b = make_benchmark(0)
    w = b.train[:10_000].reshape(100, 100, 12)
    assert fft_periods(w, 3).tolist() == [10, 25, 50]
    assert spans_from_periods(np.array([10, 25, 50])) == (2, 6, 12)


def test_masks_ratio_and_exact_cover():
    rng = np.random.default_rng(0)
    m = train_masks(rng, 64, 100, 12, (2, 6, 12))
    assert abs(m.mean() - 0.25) < 0.02
    for span in (1, 2, 6, 12):
        s = score_masks(100, 12, span)
        np.testing.assert_array_equal(s.sum(0), 1)  # every (t, c) hidden exactly once


def _driven(seed=0, n=4000, c=5):
    """Channel 0 is an AR(2) process; channel j >= 1 = 0.8 x0(t - j) + noise (0 drives all)."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n + 10, c))
    e = rng.standard_normal(x.shape)
    for t in range(2, n + 10):
        x[t, 0] = 1.2 * x[t - 1, 0] - 0.5 * x[t - 2, 0] + e[t, 0]
    for j in range(1, c):
        x[10:, j] = 0.8 * x[10 - j : n + 10 - j, 0] + 0.5 * e[10:, j]
    return x[10:]


def test_bic_recovers_the_order_of_an_ar2_process():
    x = _driven()[:, :1]  # channel 0 alone: AR(2) with both coefficients far from 0
    q, bic = select_lag_order(x, 12)
    assert q == 2 and bic.shape == (12,)


def test_the_driving_channel_gets_the_largest_role_score():
    x = _driven()
    q, _ = select_lag_order(x, 12)  # the BIC order, not one picked for the answer
    u = role_scores(x, q)
    assert np.argmax(u) == 0 and assign_roles(u, 1).tolist() == [True] + [False] * 4


def test_role_scores_match_a_direct_least_squares_fit():
    """The Gram-matrix shortcut equals fitting each regression on its own design."""
    x = _driven(1, n=600, c=3)
    x = (x - x.mean(0)) / x.std(0)
    q = 3
    lag = lambda v: np.stack([v[q - 1 - k : len(v) - 1 - k] for k in range(q)], 1)  # noqa: E731
    ones = np.ones((len(x) - q, 1))

    def rvar(design, y):
        a = np.concatenate([ones, design], 1)
        coef = np.linalg.solve(a.T @ a + 1e-3 * np.eye(a.shape[1]), a.T @ y)
        return np.mean((y - a @ coef) ** 2)

    want = np.zeros(3)
    for j in range(3):
        base = rvar(lag(x[:, j]), x[q:, j])
        for i in set(range(3)) - {j}:
            both = np.concatenate([lag(x[:, j]), lag(x[:, i])], 1)
            want[i] += np.log(base) - np.log(rvar(both, x[q:, j]))
    np.testing.assert_allclose(role_scores(x, q), want, rtol=1e-8, atol=1e-10)


def test_independent_channels_have_near_zero_role_scores():
    x = np.random.default_rng(0).standard_normal((4000, 5))
    assert np.abs(role_scores(x, lags=5)).max() < 0.02
