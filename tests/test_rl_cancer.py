import numpy as np
import pytest

from shared.rl import cancer


def test_no_dose_keeps_the_drug_at_zero_and_the_tumour_grows():
    out = cancer.rollout(np.random.default_rng(0), 0.0, 3)
    obs = out["obs"]
    assert obs.shape == (3, 31, 6) and out["actions"].shape == (3, 30)
    assert np.all(obs[:, :, 0] == 0.0) and np.all(obs[:, :, 3] == 0.0)
    size = cancer.tumour_size(obs[0])
    assert np.all(np.diff(size) > 0)  # untreated: logistic growth below the capacity


def test_one_step_matches_the_equations_written_out():
    p = cancer.CancerParams()
    x = np.array([[1.0, 7.0, 40.0, 2.0, 0.5, 3.0]])
    x2, r = cancer.step(x, np.array([1.0]), p)
    dose = 0.15 * 1.0 + 0.85 * 0.5
    c2 = (1.0 + dose) * 0.76
    kill = 0.729 * c2 * 0.24
    p2 = 7.0 + 0.121 * 7.0 * (1 - 49.0 / 100) + 0.0031 * 2.0 - 0.0295 * 7.0 - kill * 7.0
    q2 = 40.0 + 0.0295 * 7.0 - kill * 40.0
    qp2 = 2.0 + kill * 40.0 - 0.0031 * 2.0 - 0.00867 * 2.0
    np.testing.assert_allclose(x2[0], [c2, p2, q2, qp2, dose, 4.0], rtol=1e-14)
    expected = 0.5 * (49.0 - (p2 + q2 + qp2)) - 0.5 * c2
    assert r[0] == pytest.approx(expected, rel=1e-14)


def test_terminal_bonus_only_at_the_last_step_and_dosing_shrinks_the_tumour():
    p = cancer.CancerParams()
    always = cancer.rollout(np.random.default_rng(0), 1.0, 2, p)
    x = always["obs"]
    bonus = 10.0 * (p.p0 + p.q0 - cancer.tumour_size(x[:, -1]))
    shaped = 0.5 * (cancer.tumour_size(x[:, -2]) - cancer.tumour_size(x[:, -1])) - 0.5 * x[:, -1, 0]
    np.testing.assert_allclose(always["rewards"][:, -1], shaped + bonus, rtol=1e-12)
    assert cancer.tumour_size(x[0, -1]) < p.p0 + p.q0
    # deterministic dynamics: the same action sequence gives the same episode
    np.testing.assert_array_equal(always["obs"][0], always["obs"][1])
