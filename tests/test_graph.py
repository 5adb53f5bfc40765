"""shared/graph: dense and sparse batches agree, closed forms of the aggregations, invariances
of the layers, and the generators' structure."""

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.graph import batching, generators, layers


def _graphs(seed: int, sizes=(5, 7, 3)):
    rng = np.random.default_rng(seed)
    adjs, feats = [], []
    for n in sizes:
        e = generators.erdos_renyi(n, 0.5, rng)
        adjs.append(generators.adjacency(e, n, rng.uniform(0.5, 2.0, len(e))))
        feats.append(rng.normal(size=(n, 4)))
    return adjs, feats


def test_gcn_propagation_matches_the_closed_form_on_a_weighted_path():
    # path 0 -(2)- 1 -(1)- 2: D~ = diag(3, 4, 2), A~ = A + I
    a = generators.adjacency(np.array([[0, 1], [1, 2]]), 3, np.array([2.0, 1.0]))
    g, _ = batching.pad_dense([a], [np.zeros((3, 1))])
    d = np.array([3.0, 4.0, 2.0])
    want = (a + np.eye(3)) / np.sqrt(np.outer(d, d))
    got = g.gcn_propagate(jnp.eye(3)[None])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # unweighted topology: degrees 2, 3, 2
    d = np.array([2.0, 3.0, 2.0])
    want = ((a > 0) + np.eye(3)) / np.sqrt(np.outer(d, d))
    np.testing.assert_allclose(g.gcn_propagate(jnp.eye(3)[None], False)[0], want, rtol=1e-6)


def test_mean_aggregation_is_zero_on_isolated_nodes_and_the_mean_elsewhere():
    a = generators.adjacency(np.array([[0, 1], [0, 2]]), 4, np.array([3.0, 1.0]))
    h = np.array([[1.0], [2.0], [4.0], [8.0]])
    g, _ = batching.pad_dense([a], [h])
    out = g.mean_neighbors(jnp.asarray(h)[None])[0, :, 0]
    np.testing.assert_allclose(out, [3.0, 1.0, 1.0, 0.0])
    out_w = g.mean_neighbors(jnp.asarray(h)[None], weighted=True)[0, :, 0]
    np.testing.assert_allclose(out_w, [(3 * 2 + 4) / 4, 1.0, 1.0, 0.0])


@pytest.mark.parametrize("kind", ["gcn", "gin", "sage"])
def test_dense_and_sparse_batches_give_the_same_layer_outputs_and_readouts(kind):
    adjs, feats = _graphs(0)
    dense, xd = batching.pad_dense(adjs, feats, num_nodes=9)
    sparse, xs = batching.batch_sparse(adjs, feats, num_nodes=20, num_edges=60)
    layer = layers.LAYERS[kind](4, 6, rngs=nnx.Rngs(0))
    hd, hs = layer(dense, jnp.asarray(xd)), layer(sparse, jnp.asarray(xs))
    rows = [hd[b, :n] for b, n in enumerate(len(a) for a in adjs)]
    np.testing.assert_allclose(jnp.concatenate(rows), hs[: sum(map(len, adjs))], atol=1e-5)
    np.testing.assert_allclose(dense.readout_sum(hd), sparse.readout_sum(hs)[:-1], atol=1e-5)
    np.testing.assert_allclose(dense.readout_mean(hd), sparse.readout_mean(hs)[:-1], atol=1e-5)
    assert np.all(np.asarray(sparse.readout_sum(hs)[-1]) == 0)  # the padding slot


@pytest.mark.parametrize("kind", ["gcn", "gin", "sage"])
def test_layers_are_permutation_equivariant_and_readouts_invariant(kind):
    adjs, feats = _graphs(1, sizes=(6,))
    perm = np.random.default_rng(2).permutation(6)
    pa, pf = [adjs[0][np.ix_(perm, perm)]], [feats[0][perm]]
    layer = layers.LAYERS[kind](4, 5, rngs=nnx.Rngs(1))
    g, x = batching.pad_dense(adjs, feats)
    gp, xp = batching.pad_dense(pa, pf)
    h, hp = layer(g, jnp.asarray(x)), layer(gp, jnp.asarray(xp))
    np.testing.assert_allclose(h[0][perm], hp[0], atol=1e-5)
    np.testing.assert_allclose(g.readout_sum(h), gp.readout_sum(hp), atol=1e-5)


@pytest.mark.parametrize("kind", ["gcn", "gin", "sage"])
def test_padding_nodes_change_nothing(kind):
    adjs, feats = _graphs(3)
    layer = layers.LAYERS[kind](4, 5, rngs=nnx.Rngs(2))
    g1, x1 = batching.pad_dense(adjs, feats)
    g2, x2 = batching.pad_dense(adjs, feats, num_nodes=16)
    h1, h2 = layer(g1, jnp.asarray(x1)), layer(g2, jnp.asarray(x2))
    np.testing.assert_allclose(h1, h2[:, : h1.shape[1]], atol=1e-5)
    np.testing.assert_allclose(g1.readout_sum(h1), g2.readout_sum(h2), atol=1e-5)
    np.testing.assert_allclose(g1.readout_mean(h1), g2.readout_mean(h2), atol=1e-5)


def test_layers_jit_and_differentiate_on_sparse_batches():
    adjs, feats = _graphs(4)
    g, x = batching.batch_sparse(adjs, feats, num_nodes=16, num_edges=64)
    model = layers.GINConv(4, 3, learn_eps=True, rngs=nnx.Rngs(0))

    @nnx.jit
    def loss(m, g, x):
        return (g.readout_sum(m(g, x)) ** 2).sum()

    grads = nnx.grad(loss)(model, g, jnp.asarray(x))
    assert np.isfinite(np.asarray(grads.eps[...])) and float(jnp.abs(grads.eps[...])) > 0


def test_batching_rejects_sizes_that_do_not_fit():
    adjs, feats = _graphs(5)
    with pytest.raises(ValueError, match="num_nodes"):
        batching.pad_dense(adjs, feats, num_nodes=4)
    with pytest.raises(ValueError, match="num_edges"):
        batching.batch_sparse(adjs, feats, num_nodes=40, num_edges=3)


def test_generators_structure():
    rng = np.random.default_rng(0)
    tree = generators.random_tree(10, rng)
    assert tree.shape == (9, 2) and np.all(tree[:, 0] < tree[:, 1])  # parents precede children
    ring = generators.ring_with_branches(8, 4, rng)
    assert len(ring) == 8  # n edges: one cycle
    mol = generators.molecule_like(rng, (5, 15), (1, 3))
    h = mol.num_heavy
    counts = np.bincount(mol.cluster, minlength=h)
    assert 5 <= h <= 15 and np.all((counts >= 2) & (counts <= 4))  # heavy node + 1..3 leaves
    assert np.all(mol.cluster[mol.leaf_edges[:, 1]] == mol.leaf_edges[:, 0])
    grid = generators.grid_2d(4, 6)
    assert len(grid) == 2 * 4 * 6 - 4 - 6
    a = generators.adjacency(grid, 24)
    assert a.sum(1).max() == 4 and a.sum(1).min() == 2 and np.allclose(a, a.T)
    cl = generators.grid_block_clusters(4, 6, 2)
    assert np.all(np.bincount(cl) == 4) and cl[7] == 0 and cl[8] == 1
    with pytest.raises(ValueError, match="blocks"):
        generators.grid_block_clusters(5, 6, 2)


def test_erdos_renyi_edge_density():
    e = generators.erdos_renyi(200, 0.1, np.random.default_rng(0))
    m = 200 * 199 / 2 * 0.1
    assert abs(len(e) - m) < 4 * np.sqrt(m)
    assert np.all(e[:, 0] < e[:, 1])
