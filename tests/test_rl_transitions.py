import jax
import numpy as np

from shared.rl.envs import garnet
from shared.rl.mdp import stationary_distribution
from shared.rl.transitions import sample_iid_transitions


def test_iid_transitions_match_d_and_P():
    """Start states are distributed as d, and pairs (s, s') as d(s) P(s, s') (total variation)."""
    P = garnet(20, gamma=0.9, seed=3).P[:, 0]
    d = stationary_distribution(P)
    s, s2 = sample_iid_transitions(jax.random.key(0), P, d, 400_000)
    s, s2 = np.asarray(s), np.asarray(s2)
    assert s.shape == s2.shape == (400_000,) and s.dtype == np.int32
    assert 0.5 * np.abs(np.bincount(s, minlength=20) / len(s) - d).sum() < 0.01
    pairs = np.zeros((20, 20))
    np.add.at(pairs, (s, s2), 1.0)
    assert 0.5 * np.abs(pairs / len(s) - d[:, None] * P).sum() < 0.02
    assert (P[s, s2] > 0).all()  # never a transition of probability 0


def test_iid_transitions_are_independent_of_each_other():
    """Consecutive start states are uncorrelated (unlike a trajectory, where s_{t+1} = s'_t)."""
    P = garnet(20, gamma=0.9, seed=3).P[:, 0]
    d = stationary_distribution(P)
    s, s2 = sample_iid_transitions(jax.random.key(1), P, d, 200_000)
    s, s2 = np.asarray(s), np.asarray(s2)
    assert np.mean(s[1:] == s2[:-1]) < 0.2  # a trajectory would give 1.0
    joint = np.zeros((20, 20))
    np.add.at(joint, (s[:-1], s[1:]), 1.0)
    assert 0.5 * np.abs(joint / joint.sum() - np.outer(d, d)).sum() < 0.03


def test_binary_search_draw_equals_the_linear_scan_draw():
    """`_draw_rows` gives exactly `_draw` on the gathered rows (same uniforms), zeros included."""
    from shared.rl.rollouts import _cdf, _draw
    from shared.rl.transitions import _draw_rows

    P = garnet(37, gamma=0.9, branching=3, seed=4).P[:, 0]
    rows = jax.random.randint(jax.random.key(2), (5000,), 0, 37)
    key = jax.random.key(3)
    np.testing.assert_array_equal(_draw_rows(key, _cdf(P), rows), _draw(key, _cdf(P)[rows]))
