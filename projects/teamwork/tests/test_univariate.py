"""UCR #135 is univariate: what the role machinery reduces to on one channel, and the run on it."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.teamwork import experiment
from projects.teamwork.model import MaskedReconstructor, ModelConfig
from projects.teamwork.roles import assign_roles, role_scores

CFG = ModelConfig(d_model=16, num_heads=2, ff_dim=32, patch=4)


def test_one_channel_is_dominant_with_a_zero_role_score():
    x = np.random.default_rng(0).standard_normal((500, 1))
    u = role_scores(x, 5)
    assert u.tolist() == [0.0]  # an empty sum over the other channels
    assert assign_roles(u, math.ceil(1 / 4)).tolist() == [True]  # k = ceil(C / 4) = 1


def _role_output(channels: int, is_dom: jax.Array, perturb: bool) -> jax.Array:
    """Output of a role-coupled model, optionally with its gate and auxiliary attention changed."""
    model = MaskedReconstructor(CFG, 24, channels, "role", rngs=nnx.Rngs(params=0))
    if perturb:
        for layer in (model.mix.gate, model.mix.aux_attn.q, model.mix.aux_attn.kv):
            layer.kernel.value = layer.kernel.value + 0.5
    k1, k2 = jax.random.split(jax.random.key(1))
    x = jax.random.normal(k1, (2, 24, channels))
    m = jax.random.bernoulli(k2, 0.25, x.shape)
    graphdef, params = nnx.split(model)
    return jax.jit(lambda p: nnx.merge(graphdef, p)(x, m, is_dom))(params)


def test_on_one_channel_the_gate_and_auxiliary_attention_are_never_used():
    one = jnp.array([True])
    np.testing.assert_array_equal(_role_output(1, one, False), _role_output(1, one, True))
    # the same change does reach the output once an auxiliary channel exists
    two = jnp.array([True, False])
    assert jnp.abs(_role_output(2, two, False) - _role_output(2, two, True)).max() > 1e-3


def test_a_run_on_ucr135_sees_one_channel_and_a_period_longer_than_the_window(tmp_path):
    """PCA only (no compilation): the loader, the role and period steps and every metric."""
    cfg = dataclasses.replace(experiment.CONFIGS["cpu"], benchmark="ucr135", methods=("pca",))
    series = experiment.load(cfg)
    assert series.train.shape[1] == 1 and series.test_labels.sum() == 12
    res = experiment.run(cfg, tmp_path)
    assert res["data/num_auxiliary"] == 0.0
    assert max(res[f"data/periods_{i}"] for i in range(3)) <= cfg.window
    assert res["data/train_period"] > cfg.window  # the series' own period is not seen
    for k in ("f1", "pa_f1", "aff_f1", "vus_pr", "vus_roc"):
        assert 0.0 <= res[f"pca/{k}"] <= 1.0
