import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.teamwork import detect
from projects.teamwork.model import MaskedReconstructor, ModelConfig

CFG = ModelConfig(d_model=16, num_heads=2, ff_dim=32, patch=4)
IS_DOM = jnp.array([True, True, False, False, False])


def _inputs(seed=0):
    k1, k2 = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(k1, (2, 24, 5))
    return x, jax.random.bernoulli(k2, 0.25, x.shape)


def test_auxiliary_inputs_do_not_reach_dominant_outputs():
    model = MaskedReconstructor(CFG, 24, 5, "role", rngs=nnx.Rngs(params=0))
    x, m = _inputs()
    x2 = x.at[:, :, 3].add(5.0)  # perturb one auxiliary channel
    graphdef, params = nnx.split(model)
    fwd = jax.jit(lambda xx: nnx.merge(graphdef, params)(xx, m, IS_DOM))  # eager NNX is slow
    out, out2 = fwd(x), fwd(x2)
    np.testing.assert_array_equal(out[:, :, :2], out2[:, :, :2])  # exactly: keys are masked
    assert jnp.abs(out[:, :, 2:] - out2[:, :, 2:]).max() > 1e-3  # auxiliaries do see it
    # and the gradient of the dominant outputs w.r.t. auxiliary inputs is zero
    g = jax.jit(jax.grad(lambda xx: fwd(xx)[:, :, :2].sum()))(x)
    assert jnp.abs(g[:, :, 2:]).max() == 0.0 and jnp.abs(g[:, :, :2]).max() > 0


def test_symmetric_coupling_does_mix_auxiliary_into_dominant():
    model = MaskedReconstructor(CFG, 24, 5, "symmetric", rngs=nnx.Rngs(params=0))
    x, m = _inputs()
    graphdef, params = nnx.split(model)
    fwd = jax.jit(lambda xx: nnx.merge(graphdef, params)(xx, m, IS_DOM))
    out, out2 = fwd(x), fwd(x.at[:, :, 3].add(5.0))
    assert jnp.abs(out[:, :, :2] - out2[:, :, :2]).max() > 1e-4


def test_score_is_higher_on_anomalies_on_an_easy_series():
    rng = np.random.default_rng(0)
    t = np.arange(3000)
    base = np.stack([np.sin(2 * np.pi * t / 20), np.cos(2 * np.pi * t / 20)], 1)
    x = (base + 0.05 * rng.standard_normal(base.shape)).astype(np.float32)
    train, test = x[:2000], x[2000:].copy()
    labels = np.zeros(1000, bool)
    for s in (100, 400, 700):
        test[s : s + 10, 0] += 3.0  # level shifts: easy anomalies
        labels[s : s + 10] = True
    dom = np.array([True, False])
    tcfg = detect.TrainConfig(steps=150, batch_size=16)
    model = detect.train_detector(train, dom, (1, 5), 40, "role", True, CFG, tcfg, 0)
    score = detect.score_series(model, test, dom, (1, 5), 40)
    assert score[labels].mean() > 5 * score[~labels].mean()
    pca = detect.pca_scores(train, test, 8, 0.95)
    assert pca[labels].mean() > 5 * pca[~labels].mean()
