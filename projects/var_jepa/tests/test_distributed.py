"""One T-JEPA train step data-parallel on an 8-device CPU mesh equals the 1-device step."""

import dataclasses

import jax
import numpy as np

from projects.var_jepa import experiment, pretrain
from shared import distributed
from shared.data import tabular


def test_data_parallel_step_matches_single_device():
    assert jax.device_count() == 8, "the root conftest.py sets 8 CPU devices"
    smoke = experiment.CONFIGS["smoke"]
    data = tabular.split(tabular.make_synthetic(n=400), 0).train
    cfg = dataclasses.replace(smoke.pretrain, batch_size=64)
    batch = {"x_num": data.x_num[:64], "x_cat": data.x_cat[:64]}

    state, step_fn, _ = pretrain.tjepa_setup(data, smoke.model, smoke.mask, cfg, seed=0)
    single_state, single = step_fn(state, batch, 0)

    state, step_fn, _ = pretrain.tjepa_setup(data, smoke.model, smoke.mask, cfg, seed=0)
    mesh = distributed.data_mesh()
    state, dp_step = distributed.data_parallel(state, step_fn, mesh)
    dp_state, dp = dp_step(state, batch, 0)

    model_state = dp_state["train"][0]  # nnx.state((model, optimizer)): the model half
    assert len(model_state["encoder"]["body"]["fc"]["kernel"][...].devices()) == 8
    np.testing.assert_allclose(dp["loss"], single["loss"], rtol=1e-5)
    for a, b in zip(jax.tree.leaves(dp_state), jax.tree.leaves(single_state)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
