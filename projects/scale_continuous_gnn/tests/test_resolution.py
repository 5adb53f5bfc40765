"""The multi-resolution family and the node-weighted resolvent (numpy, float64)."""

import numpy as np
import pytest

from projects.scale_continuous_gnn import data, resolution
from shared.graph import generators


def _random_clustered(seed: int, n: int = 8, k: int = 4) -> resolution.Multiscale:
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(k), n // k)
    inside = [(i, i + 1) for i in range(0, n, n // k)]  # connects each pair cluster
    edges = np.unique(
        np.sort(np.concatenate([generators.erdos_renyi(n, 0.5, rng), inside]), 1), axis=0
    )
    return resolution.from_edges(
        edges, cluster, rng.normal(size=(n, 3)), rng.uniform(0.5, 2, len(edges))
    )


def test_coarse_graph_of_a_hand_built_example():
    # clusters {0, 1} and {2}; edges 0-1 (inside, weight 3), 1-2 (2.0), 0-2 (0.5)
    g = resolution.from_edges(
        np.array([[0, 1], [1, 2], [0, 2]]),
        np.array([0, 0, 1]),
        np.array([[1.0], [3.0], [5.0]]),
        np.array([3.0, 2.0, 0.5]),
    )
    c = g.coarse()
    np.testing.assert_allclose(c.w, [[0, 2.5], [2.5, 0]])
    np.testing.assert_allclose(c.mu, [2, 1])
    np.testing.assert_allclose(c.x, [[2.0], [5.0]])  # mu-weighted cluster mean
    np.testing.assert_allclose(g.fine(10.0).w[0, 1], 30.0)
    with pytest.raises(ValueError, match="w_inter"):
        resolution.Multiscale(g.w_intra, g.w_inter, g.cluster, g.x)


def test_laplacian_is_self_adjoint_in_the_mass_inner_product_and_kills_constants():
    c = _random_clustered(0).coarse()
    lap = resolution.laplacian(c)
    ml = c.mu[:, None] * lap
    np.testing.assert_allclose(ml, ml.T, atol=1e-12)
    np.testing.assert_allclose(lap @ np.ones(len(c.mu)), 0, atol=1e-12)
    np.testing.assert_allclose(resolution.resolvent(c) @ np.ones(len(c.mu)), 1, atol=1e-12)
    with pytest.raises(ValueError, match="negative"):
        resolution.resolvent(c, z=0.5)


@pytest.mark.parametrize("seed", [0, 1])
def test_resolvent_converges_to_the_lifted_coarse_resolvent_at_rate_one_over_lambda(seed):
    g = _random_clustered(seed)
    target = g.lift() @ resolution.resolvent(g.coarse()) @ g.restrict()
    lams = np.array([10.0, 100.0, 1e3, 1e4, 1e5])
    err = np.array([np.linalg.norm(resolution.resolvent(g.fine(lam)) - target, 2) for lam in lams])
    assert np.all(np.diff(err) < 0)
    scaled = err * lams  # bounded and converging: the error is C / lambda + O(1 / lambda^2)
    assert scaled.max() < 10 * scaled[0]
    np.testing.assert_allclose(scaled[-1], scaled[-2], rtol=1e-3)


def test_weighted_readout_of_a_lifted_signal_equals_the_coarse_weighted_readout():
    g = _random_clustered(2)
    h_c = np.random.default_rng(0).normal(size=(g.num_clusters, 5))
    fine_sum = g.fine(1.0).mu @ (g.lift() @ h_c)
    np.testing.assert_allclose(fine_sum, g.coarse().mu @ h_c, rtol=1e-12)


def test_target_is_continuous_across_resolutions():
    # tr R(L_lambda) -> tr R(L_c): the target describes the object, not one resolution
    g = data.draw_graphs(data.DataConfig("molecules", num_graphs=20), seed=0)[0]
    tr = [np.trace(resolution.resolvent(g.fine(lam))) for lam in (1e2, 1e4)]
    tr_c = np.trace(resolution.resolvent(g.coarse()))
    assert abs(tr[1] - tr_c) < abs(tr[0] - tr_c) / 50


def test_grids_and_molecules_have_the_documented_clusters():
    cfg = data.DataConfig("molecules", num_graphs=20)
    for g in data.draw_graphs(cfg, 1):
        c = g.coarse()
        assert 5 <= len(c.mu) <= 15 and np.all((c.mu >= 2) & (c.mu <= 4))
        np.testing.assert_allclose(c.x.sum(1), 1.0)  # one-hot mixtures
    grid = resolution.grid(4, 6, np.ones((24, 2)))
    c = grid.coarse()
    np.testing.assert_allclose(c.mu, 4.0)
    assert set(np.unique(c.w)) == {0.0, 2.0}  # two grid edges join adjacent 2x2 blocks
