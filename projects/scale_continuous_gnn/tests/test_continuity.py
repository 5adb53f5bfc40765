"""The claim: the resolvent model's embedding converges to the coarse graph's as lambda grows;
a standard GCN's provably does not (closed form on a hand-built example); invariances."""

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from projects.scale_continuous_gnn import data, experiment, resolution
from projects.scale_continuous_gnn.models import MODELS, GraphNet
from shared.graph import batching, layers

LAMS = (1.0, 10.0, 100.0, 1e3, 1e4)


def _gcn_closed_form(lam: float) -> np.ndarray:
    """GCN propagation of the constant signal on the path 0 -(lam)- 1 -(1)- 2, clusters {0, 1},
    {2}: D~ = diag(1 + lam, 2 + lam, 2)."""
    s = np.sqrt((1 + lam) * (2 + lam))
    t = 1 / np.sqrt(2 * (2 + lam))
    return np.array([1 / (1 + lam) + lam / s, lam / s + 1 / (2 + lam) + t, 0.5 + t])


@pytest.mark.parametrize("lam", LAMS)
def test_gcn_does_not_converge_to_the_coarse_graph_closed_form(lam):
    g = resolution.from_edges(np.array([[0, 1], [1, 2]]), np.array([0, 0, 1]), np.ones((3, 1)))
    conv = layers.GCNConv(1, 1, rngs=nnx.Rngs(0))
    conv.linear.kernel[...] = jnp.ones((1, 1))  # h' = A_hat h: the propagation itself
    fine, coarse = g.fine(lam), g.coarse()
    h_f = conv(batching.pad_dense([fine.w], [fine.x])[0], jnp.ones((1, 3, 1)))[0, :, 0]
    h_c = conv(batching.pad_dense([coarse.w], [coarse.x])[0], jnp.ones((1, 2, 1)))[0, :, 0]
    np.testing.assert_allclose(h_f, _gcn_closed_form(lam), rtol=1e-5)
    np.testing.assert_allclose(h_c, [1.0, 1.0], rtol=1e-6)  # coarse: A_hat = [[.5, .5], [.5, .5]]
    # node 2 is its own cluster: fine 1/2 + 1/sqrt(2(2 + lam)) -> 1/2, coarse 1, for every lam
    gap = abs(float(h_f[2]) - float(h_c[1]))
    assert gap == pytest.approx(0.5 - 1 / np.sqrt(2 * (2 + lam)), rel=1e-5)
    assert gap >= 0.5 - 1 / np.sqrt(6) - 1e-6  # bounded away from 0, limit 1/2


def _molecules(n: int = 6, leaves=(1, 3)) -> list[resolution.Multiscale]:
    cfg = data.DataConfig("molecules", num_graphs=20, heavy_range=(4, 7), leaves_range=leaves)
    return data.draw_graphs(cfg, seed=0)[:n]


def _net(name: str) -> GraphNet:
    return GraphNet(name, 5, 16, 2, 2, rngs=nnx.Rngs(0))


@pytest.fixture(scope="module")
def gaps():
    graphs = _molecules()
    return {m: np.array(experiment.gap_curve(_net(m), graphs, LAMS, -1.0)) for m in MODELS}


def test_resolvent_model_gap_falls_like_one_over_lambda(gaps):
    g = gaps["resolvent"]
    assert np.all(np.diff(g) < 0), g
    # operator error C / lambda carries through the Lipschitz network: 100x lambda, ~1/100 gap
    assert g[-1] < 0.03 * g[2] and g[-1] < 1e-3, g


@pytest.mark.parametrize("name", ["gcn", "gin", "sage", "gcn_mean", "gin_mean", "sage_mean"])
def test_standard_models_plateau_at_a_nonzero_gap(gaps, name):
    g = gaps[name]
    assert g[-1] > 0.05 and g[-1] > 0.5 * g[-2], g  # no decay between lambda = 1e3 and 1e4


def test_ablations_break_continuity(gaps):
    # unweighted sum counts fine nodes (2-4 per cluster); the k = 0 term sees H-vs-heavy features
    assert gaps["resolvent_sum"][-1] > 0.3 and gaps["resolvent_k0"][-1] > 0.01


def test_trivial_clusters_give_identical_embeddings_for_every_model():
    graphs = _molecules(6, leaves=(0, 0))  # every cluster a single node: no lambda anywhere
    sizes = data.max_nodes(_molecules(), False), data.max_nodes(_molecules(), True)
    for name in MODELS:  # padded like the `gaps` fixture's graphs: the compiled shapes are reused
        assert experiment.gap_curve(_net(name), graphs, (1e4,), -1.0, *sizes)[0] < 1e-6, name


def _permuted(b: data.Batch, perm: np.ndarray) -> data.Batch:
    return data.Batch(
        b.adj[:, perm][:, :, perm],
        b.mask[:, perm],
        b.mu[:, perm],
        b.x[:, perm],
        b.res[:, perm][:, :, perm],
        b.y,
    )


@pytest.mark.parametrize("name", list(MODELS))
def test_graph_outputs_are_permutation_and_padding_invariant(name):
    graphs = _molecules(2)
    y = np.zeros(2)
    n = data.max_nodes(graphs, False)
    b = data.resolution_batch(graphs, y, "fine", 10.0, -1.0, n)
    padded = data.resolution_batch(graphs, y, "fine", 10.0, -1.0, n + 5)
    net = _net(name)
    out = np.asarray(net(b))
    perm = np.random.default_rng(0).permutation(n)
    np.testing.assert_allclose(net(_permuted(b, perm)), out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(net(padded), out, rtol=1e-4, atol=1e-5)
