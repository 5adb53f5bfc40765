"""The fast T-JEPA step: sparse dropout masks, the blocked FFN backward, size buckets."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.var_jepa import experiment, masks, pretrain, tjepa_blocks
from shared.data import tabular


def test_drop_mask_is_bernoulli_and_deterministic():
    rate, shape = 0.002, (1000, 1000)
    m = np.asarray(tjepa_blocks.drop_mask(jax.random.key(0), shape, rate))
    again = np.asarray(tjepa_blocks.drop_mask(jax.random.key(0), shape, rate))
    other = np.asarray(tjepa_blocks.drop_mask(jax.random.key(1), shape, rate))
    np.testing.assert_array_equal(m, again)  # same key, same mask
    assert not np.array_equal(m, other)
    n = m.size
    sd = np.sqrt(n * rate * (1 - rate))
    assert abs(m.sum() - n * rate) < 5 * sd  # count ~ Binomial(n, rate)
    # drops spread over the whole array (no truncation at the end), rows and columns alike
    assert m[-100:].sum() > 0 and abs(m[:, :500].sum() - m[:, 500:].sum()) < 5 * sd
    # gaps between drops are Geometric(rate): mean 1/rate
    gaps = np.diff(np.flatnonzero(m.reshape(-1)))
    assert abs(gaps.mean() * rate - 1) < 0.05


def test_dropout_scales_kept_values():
    x = jnp.ones((300, 300))
    y = np.asarray(tjepa_blocks.dropout(x, 0.1, jax.random.key(3)))
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.9], rtol=1e-6)
    np.testing.assert_array_equal(tjepa_blocks.dropout(x, 0.1, None), x)


def _ffn_reference(x, fc1, fc2, rate, key):
    h = nnx.relu(fc1(x))
    if key is not None:
        h = jnp.where(tjepa_blocks.drop_mask(key, h.shape, rate), 0.0, h / (1 - rate))
    return fc2(h)


def test_blocked_ffn_matches_autodiff_of_the_reference():
    fc1 = nnx.Linear(16, 64, rngs=nnx.Rngs(0))
    fc2 = nnx.Linear(64, 16, rngs=nnx.Rngs(1))
    x = jax.random.normal(jax.random.key(2), (3, 700, 16))  # 2100 tokens: not a block multiple
    key = jax.random.key(4)
    for rate, k in ((0.0, None), (0.05, key)):

        def loss(f, mods, x, rate=rate, k=k):
            return jnp.sum(jnp.sin(f(x, mods[0], mods[1], rate, k)))

        got = nnx.grad(lambda m, x: loss(tjepa_blocks.ffn, m, x), argnums=(0, 1))((fc1, fc2), x)
        want = nnx.grad(lambda m, x: loss(_ffn_reference, m, x), argnums=(0, 1))((fc1, fc2), x)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_official_size_distribution_halves_the_end_sizes():
    d, cfg = 14, masks.MaskConfig()
    rng = np.random.default_rng(0)
    s = np.array([masks.sample_sizes(rng, d, cfg) for _ in range(20000)])
    ctx = np.bincount(s[:, 0], minlength=6)[2:6] / len(s)  # sizes 2..5, width 3
    np.testing.assert_allclose(ctx, [1 / 6, 1 / 3, 1 / 3, 1 / 6], atol=0.015)


def test_bucket_edges_and_padded_sizes():
    assert masks.bucket_edges(2, 9, 0) == tuple(range(2, 10))
    assert masks.bucket_edges(2, 9, 1) == (9,)
    assert masks.bucket_edges(2, 9, 3) == (4, 7, 9)
    cfg = masks.MaskConfig()
    assert masks.padded_sizes((3, 5), 14, cfg, 1) == masks.max_sizes(14, cfg)
    assert masks.padded_sizes((3, 5), 14, cfg, 0) == (3, 5)
    assert masks.padded_sizes((3, 5), 14, cfg, 3) == (3, 7)


def test_bucketed_loss_equals_padded_loss_at_the_same_masks():
    """Padding is inert: the exact-size step and the max-padded step give the same loss and
    gradients when the index sampler draws the same masks (dropout off: the dropout masks of
    padded tensors differ in shape)."""
    smoke = experiment.CONFIGS["smoke"]
    data = tabular.split(tabular.make_synthetic(n=200), 0).train
    model_cfg = dataclasses.replace(smoke.model, dropout=0.0)
    model = pretrain.TJEPA(data.x_num.shape[1], data.cat_cardinalities, model_cfg, rngs=nnx.Rngs(0))
    d = model.encoder.num_tokens - 1
    batch = {"x_num": jnp.asarray(data.x_num[:32]), "x_cat": jnp.asarray(data.x_cat[:32])}
    sizes = (2, 3)
    key = jax.random.key(5)

    def run(pads):
        def f(m):
            return pretrain.tjepa_loss(
                m, m.encoder, batch, key, jnp.asarray(sizes), smoke.mask, 1, pads
            )[0]

        return nnx.value_and_grad(f)(model)

    # The sampler's argsort draws do not depend on the padded size, so both see the same masks.
    exact_loss, exact_g = run(sizes)
    max_loss, max_g = run(masks.max_sizes(d, smoke.mask))
    np.testing.assert_allclose(exact_loss, max_loss, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(exact_g), jax.tree.leaves(max_g)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_step_is_deterministic_with_dropout():
    smoke = experiment.CONFIGS["smoke"]
    data = tabular.split(tabular.make_synthetic(n=200), 0).train
    model_cfg = dataclasses.replace(smoke.model, dropout=0.05)
    cfg = dataclasses.replace(smoke.pretrain, batch_size=32)
    batch = {"x_num": data.x_num[:32], "x_cat": data.x_cat[:32]}
    out = []
    for _ in range(2):
        state, step_fn, _ = pretrain.tjepa_setup(data, model_cfg, smoke.mask, cfg, seed=0)
        state, m = step_fn(state, batch, 3)
        out.append((float(m["loss"]), jax.tree.leaves(state)))
    assert out[0][0] == out[1][0]
    for a, b in zip(out[0][1], out[1][1]):
        np.testing.assert_array_equal(a, b)
