"""The two sampling regimes and the continuing ICU-Sepsis chain."""

import jax
import numpy as np
import pytest

from projects.td_exp_step import problems
from projects.td_exp_step.td import sample_transitions


@pytest.fixture(scope="module")
def garnet():
    return problems.garnet_problem(num_states=30, feature_dim=5, gamma=0.9, seed=2)


def test_markov_sampler_frequencies_match_d(garnet):
    """One trajectory of 10^6 steps: state frequencies within total variation 0.02 of d, and
    consecutive samples chained (s_{t+1} = s'_t)."""
    s, s2 = sample_transitions(jax.random.key(0), garnet.P, garnet.d, "markov", 1, 1_000_000)
    s, s2 = np.asarray(s[0]), np.asarray(s2[0])
    np.testing.assert_array_equal(s[1:], s2[:-1])
    assert 0.5 * np.abs(np.bincount(s, minlength=30) / len(s) - garnet.d).sum() < 0.02


def test_iid_sampler_frequencies_match_d_and_seeds_differ(garnet):
    s, s2 = sample_transitions(jax.random.key(0), garnet.P, garnet.d, "iid", 2, 200_000)
    s, s2 = np.asarray(s), np.asarray(s2)
    assert 0.5 * np.abs(np.bincount(s[0], minlength=30) / s.shape[1] - garnet.d).sum() < 0.02
    assert (garnet.P[s, s2] > 0).all() and (s[0] != s[1]).mean() > 0.5
    with pytest.raises(ValueError, match="regime"):
        sample_transitions(jax.random.key(0), garnet.P, garnet.d, "bogus", 1, 10)


def test_icu_sepsis_chain_is_continuing_and_features_are_unit_norm():
    p = problems.icu_sepsis_problem(0.95)
    np.testing.assert_allclose(p.P.sum(1), 1.0, atol=1e-12)
    assert np.abs(p.d @ p.P - p.d).max() < 1e-10 and p.d.sum() == pytest.approx(1.0, 1e-12)
    assert np.linalg.norm(p.phi, axis=1).max() == pytest.approx(1.0, 1e-12)
    assert p.phi.shape == (716, 49)  # 47 centres + indicators of the visited terminals 713, 714
    assert p.d[715] == 0 and p.d[713] > 0 and p.d[714] > 0
    assert p.r.max() <= 1.0 and p.r[713:].sum() == 0  # r_pi: +1 only on entering survival
    assert p.omega > 0 and np.allclose(p.A @ p.theta_star, p.b, atol=1e-10)
