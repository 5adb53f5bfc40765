"""Node regression on one grid: targets agree across resolutions, padding is masked, the
resolvent model's node outputs converge to the coarse ones (GCN's do not need to), and a tiny
run trains every model through `node_task.run`."""

import dataclasses

import jax
import numpy as np
import pytest
from flax import nnx

from projects.scale_continuous_gnn import experiment, node_task, resolution, tables, train
from projects.scale_continuous_gnn.models import GraphNet

TINY = node_task.NodeConfig(side=8, num_instances=8)


def test_fine_targets_are_the_coarse_targets_of_each_cluster_and_the_resolvent_limit():
    g = node_task.draw(TINY, seed=0)[0]
    fine = node_task.batch([g], TINY, "fine", 1e4, 64)
    coarse = node_task.batch([g], TINY, "coarse", 1.0, 64)
    np.testing.assert_allclose(fine.y[0], coarse.y[0, :16][g.cluster], rtol=0, atol=0)
    assert coarse.mask[0].sum() == 16 and not coarse.y[0, 16:].any()  # padding holds no target
    # the target is the lambda -> inf limit of the same filter on the fine graph (1/lambda rate)
    v = np.asarray(TINY.v)
    limit = np.tanh(resolution.resolvent(g.fine(1e4), TINY.z) @ g.x @ v)
    np.testing.assert_allclose(limit, fine.y[0], atol=1e-3)
    assert (
        np.abs(np.tanh(resolution.resolvent(g.fine(1.0), TINY.z) @ g.x @ v) - fine.y[0]).max()
        > 0.01
    )


def test_node_mae_ignores_padded_nodes():
    graphs = node_task.draw(TINY, seed=1)
    b = node_task.batch(graphs, TINY, "mixed", 100.0, 64, seed=0)
    assert 0 < b.mask.sum() < b.mask.size  # mixed: some graphs are coarse and padded
    pred = np.where(b.mask, b.y + 0.5, 1e6)  # huge errors only where nodes are padding
    assert node_task.node_mae(pred, b) == pytest.approx(0.5, abs=1e-6)


def _node_gap(name: str, lam: float) -> float:
    g = node_task.draw(TINY, seed=2)[0]
    model = GraphNet(name, 4, 16, 2, 2, rngs=nnx.Rngs(jax.random.key(0)))
    fine = np.asarray(model.node_predict(node_task.batch([g], TINY, "fine", lam, 64)))[0]
    coarse = np.asarray(model.node_predict(node_task.batch([g], TINY, "coarse", 1.0, 16)))[0]
    return float(np.abs(fine - coarse[g.cluster]).max() / np.abs(coarse).max())


def test_resolvent_node_outputs_converge_to_the_coarse_ones_and_the_k0_term_breaks_it():
    jax.config.update("jax_default_matmul_precision", "highest")
    assert _node_gap("resolvent", 1e4) < 1e-3 < _node_gap("resolvent", 1.0)
    assert _node_gap("resolvent_k0", 1e4) > 1e-2  # the identity term sees within-cluster x


def test_tiny_run_trains_every_model_and_yields_every_table_row():
    cfg = experiment.CONFIGS["grid_nodes"]
    tcfg = dataclasses.replace(cfg.train, width=8, epochs=2, epochs_per_call=1)

    class Bar:
        def set_description(self, _):
            pass

        def update(self):
            pass

    out = node_task.run(TINY, cfg.models, tcfg, cfg.lam, cfg.train_on, 0, Bar())
    for m in (*cfg.models, "train_mean"):
        for a, b in (
            ("fine", "fine"),
            ("fine", "coarse"),
            ("coarse", "coarse"),
            ("coarse", "fine"),
        ):
            assert np.isfinite(out[f"grid_nodes/{m}/{a}_to_{b}"])
    assert out["grid_nodes/resolvent/fine_final_loss"] >= 0
    # the table's rows are metrics this config produces
    for row in tables.GRID_NODES.rows:
        assert f"{row.prefix}/fine_to_coarse" in out


def test_predict_nodes_handles_a_partial_last_chunk():
    graphs = node_task.draw(TINY, seed=3)[:3]
    b = node_task.batch(graphs, TINY, "coarse", 1.0, 16)
    model = GraphNet("gcn", 4, 8, 1, 2, rngs=nnx.Rngs(jax.random.key(1)))
    t = train.Trained(model, y_mean=0.0, y_std=1.0, losses=[])
    full = train.predict_nodes(t, b, chunk=8)
    parts = train.predict_nodes(t, b, chunk=2)
    assert full.shape == (3, 16)
    np.testing.assert_allclose(full, parts, atol=1e-5)
