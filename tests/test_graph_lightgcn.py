"""LightGCN propagation: Â entries on a hand-built graph, symmetry, spectrum, dense agreement."""

import jax.numpy as jnp
import numpy as np
import pytest

from shared.graph.lightgcn import dense_adjacency, lightgcn, normalized_edges, propagate


def _random_graph(seed=0, users=7, items=9, n=25):
    rng = np.random.default_rng(seed)
    return rng.integers(0, users, n), rng.integers(0, items, n), users, items


def test_hand_built_two_users_three_items():
    # u0-{i0, i1}, u1-{i1, i2}: degrees u0=2, u1=2, i0=1, i1=2, i2=1 (items are nodes 2, 3, 4)
    a = dense_adjacency(normalized_edges(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 2]), 2, 3))
    expected = np.zeros((5, 5))
    expected[0, 2] = expected[2, 0] = 1 / np.sqrt(2 * 1)
    expected[0, 3] = expected[3, 0] = 1 / np.sqrt(2 * 2)
    expected[1, 3] = expected[3, 1] = 1 / np.sqrt(2 * 2)
    expected[1, 4] = expected[4, 1] = 1 / np.sqrt(2 * 1)
    np.testing.assert_allclose(a, expected, atol=1e-7)


def test_symmetric_no_self_loops_spectrum_in_unit_interval_duplicates_once():
    users, items, nu, ni = _random_graph()
    edges = normalized_edges(users, items, nu, ni)
    a = dense_adjacency(edges)
    np.testing.assert_allclose(a, a.T, atol=1e-7)
    assert np.all(np.diag(a) == 0)
    assert np.all(a[:nu, :nu] == 0) and np.all(a[nu:, nu:] == 0)  # bipartite
    eig = np.linalg.eigvalsh(a)
    assert eig.min() >= -1 - 1e-6 and eig.max() <= 1 + 1e-6
    # a bipartite normalized adjacency has +1 and -1 eigenvalues (one pair per component)
    assert np.isclose(eig.max(), 1.0, atol=1e-6) and np.isclose(eig.min(), -1.0, atol=1e-6)
    # duplicated interactions count once
    twice = normalized_edges(np.concatenate([users, users]), np.concatenate([items, items]), nu, ni)
    np.testing.assert_allclose(dense_adjacency(twice), a, atol=1e-7)


def test_segment_sum_propagation_equals_dense_powers_and_layer_mean():
    users, items, nu, ni = _random_graph(seed=1)
    edges = normalized_edges(users, items, nu, ni)
    a = dense_adjacency(edges)
    ego = np.random.default_rng(2).normal(size=(nu + ni, 4)).astype(np.float32)
    args = (jnp.asarray(edges.src), jnp.asarray(edges.dst), jnp.asarray(edges.weight))
    layers = np.asarray(propagate(jnp.asarray(ego), *args, num_layers=3))
    expected = [ego.astype(np.float64)]
    for _ in range(3):
        expected.append(a @ expected[-1])
    np.testing.assert_allclose(layers, np.stack(expected), atol=1e-5)
    pooled, _ = lightgcn(jnp.asarray(ego), *args, num_layers=3)
    np.testing.assert_allclose(np.asarray(pooled), np.stack(expected).mean(0), atol=1e-5)


def test_out_of_range_ids_are_rejected():
    with pytest.raises(ValueError, match="item ids"):
        normalized_edges(np.array([0]), np.array([3]), 1, 3)
