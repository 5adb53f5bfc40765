import dataclasses

import jax.numpy as jnp
import numpy as np
import pytest

from projects.var_jepa import experiment, pretrain
from shared.data import tabular

SMOKE = experiment.CONFIGS["smoke"]


def test_ema_update_and_linear_momentum_schedule():
    assert float(pretrain.ema_momentum(0, 100, 0.996, 1.0)) == pytest.approx(0.996)
    assert float(pretrain.ema_momentum(99, 100, 0.996, 1.0)) == pytest.approx(1.0)
    assert float(pretrain.ema_momentum(33, 100, 0.996, 1.0)) == pytest.approx(0.996 + 0.004 / 3)
    target, online = {"w": jnp.array([1.0, 2.0])}, {"w": jnp.array([3.0, -2.0])}
    m = 0.9
    np.testing.assert_allclose(
        pretrain.ema_update(target, online, m)["w"],
        m * target["w"] + (1 - m) * online["w"],
        rtol=1e-6,
    )


@pytest.fixture(scope="module")
def small_data():
    d = tabular.make_synthetic(n=300)
    return tabular.split(d, 0).train


def test_probe_input_sizes(small_data):
    """T-JEPA probes see (D + n_cls) * H inputs, Var-T-JEPA D * H (it has no [REG] token)."""
    cfg = dataclasses.replace(SMOKE.pretrain, steps=2, checkpoint_every=0)
    d, h = small_data.num_features, SMOKE.model.hidden_dim
    t = pretrain.train_tjepa(small_data, SMOKE.model, SMOKE.mask, cfg, 0, None)
    emb, _ = pretrain.embed(t, "tjepa", small_data.take(np.arange(10)))
    assert emb.shape == (10, (d + SMOKE.model.n_cls_tokens) * h)
    v = pretrain.train_var_tjepa(small_data, SMOKE.model, SMOKE.mask, SMOKE.var, cfg, 0, None)
    emb, sigma = pretrain.embed(v, "var_tjepa", small_data.take(np.arange(10)))
    assert emb.shape == (10, d * h) and sigma.shape == (10, d, h) and (sigma > 0).all()


def test_var_elbo_decreases(small_data):
    model = SMOKE.model
    cfg = dataclasses.replace(SMOKE.pretrain, steps=60, lr=3e-3, warmup_steps=5, log_every=10)
    losses = []
    orig = pretrain.train_loop

    def spy(**kw):
        fn = kw["step_fn"]

        def step(state, batch, i):
            state, m = fn(state, batch, i)
            losses.append(float(m["loss"]))
            return state, m

        return orig(**{**kw, "step_fn": step})

    pretrain.train_loop = spy
    try:
        pretrain.train_var_tjepa(small_data, model, SMOKE.mask, SMOKE.var, cfg, 0, None)
    finally:
        pretrain.train_loop = orig
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.1
