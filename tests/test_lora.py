"""LoRA on a parameter pytree (shared/models/lora.py): shapes and targets, zero init, conv
reshaping, and merged LoRA task vectors equal W0 + λ Σ_i A_i B_i on the layer itself."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.models import lora, merging


class _Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.conv = nnx.Conv(2, 6, (3, 3), rngs=rngs)
        self.dense = nnx.Linear(6, 5, rngs=rngs)

    def __call__(self, x):  # x: [b, H, W, 2] -> [b, 5]
        return self.dense(jax.nn.relu(self.conv(x)).mean((1, 2)))


def _params():
    model = _Net(nnx.Rngs(0))
    graphdef, state = nnx.split(model, nnx.Param)
    return graphdef, nnx.to_pure_dict(state)


def test_shapes_targets_and_zero_init_changes_nothing():
    _, params = _params()
    factors = lora.init_lora(params, rank=2, key=jax.random.key(0))
    assert set(factors) == {"conv/kernel", "dense/kernel"}  # biases are not targets
    assert factors["conv/kernel"]["a"].shape == (3 * 3 * 2, 2)
    assert factors["conv/kernel"]["b"].shape == (2, 6)
    assert factors["dense/kernel"]["a"].shape == (6, 2)
    assert factors["dense/kernel"]["b"].shape == (2, 5)
    assert float(jnp.abs(factors["dense/kernel"]["a"]).sum()) > 0
    delta = lora.lora_delta(params, factors)
    assert jax.tree.structure(delta) == jax.tree.structure(params)
    assert all(float(jnp.abs(d).max()) == 0 for d in jax.tree.leaves(delta))
    merged = lora.apply_lora(params, factors, scale=3.0)
    for w, m in zip(jax.tree.leaves(params), jax.tree.leaves(merged)):
        np.testing.assert_array_equal(w, m)
    with pytest.raises(ValueError, match="rank"):
        lora.init_lora(params, rank=6, key=jax.random.key(0))


def test_conv_delta_is_the_reshaped_matrix_product():
    _, params = _params()
    factors = lora.init_lora(params, rank=2, key=jax.random.key(1))
    factors["conv/kernel"]["b"] = jax.random.normal(jax.random.key(2), (2, 6))
    a, b = (np.asarray(factors["conv/kernel"][k], np.float64) for k in "ab")
    want = (a @ b).reshape(3, 3, 2, 6)
    got = lora.lora_delta(params, factors)["conv"]["kernel"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert float(jnp.abs(lora.lora_delta(params, factors)["dense"]["bias"]).max()) == 0


def test_merged_lora_task_vectors_equal_the_low_rank_update_of_the_layer():
    """Spec: W0 + λ Σ_i A_i B_i equals task arithmetic of the dense deltas, and the merged
    model's dense layer computes x @ (W0 + λ Σ_i A_i B_i) + b."""
    graphdef, params = _params()
    tasks = []
    for i in range(3):
        f = lora.init_lora(params, rank=2, key=jax.random.key(10 + i))
        for name in f:
            f[name]["b"] = 0.1 * jax.random.normal(jax.random.key(20 + i), f[name]["b"].shape)
        tasks.append(f)
    lam = 0.4
    taus = [lora.lora_delta(params, f) for f in tasks]
    merged = merging.task_arithmetic(params, taus, lam)
    w0 = np.asarray(params["dense"]["kernel"], np.float64)
    ab = [np.asarray(f["dense/kernel"]["a"], np.float64) @ np.asarray(f["dense/kernel"]["b"])
          for f in tasks]  # fmt: skip
    want = w0 + lam * sum(ab)
    np.testing.assert_allclose(merged["dense"]["kernel"], want, rtol=1e-5, atol=1e-6)
    # applying each LoRA in turn with scale λ is the same merge
    seq = params
    for f in tasks:
        seq = lora.apply_lora(seq, f, scale=lam)
    for a, b in zip(jax.tree.leaves(seq), jax.tree.leaves(merged)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the merged dense layer on features
    feats = jax.random.normal(jax.random.key(3), (4, 6))
    out = nnx.merge(graphdef, merged).dense(feats)
    bias = np.asarray(params["dense"]["bias"], np.float64)
    np.testing.assert_allclose(out, np.asarray(feats, np.float64) @ want + bias, rtol=1e-4,
                               atol=1e-5)  # fmt: skip


def test_unknown_lora_leaf_is_named():
    _, params = _params()
    factors = lora.init_lora(params, rank=1, key=jax.random.key(0))
    factors["head/kernel"] = factors["dense/kernel"]
    with pytest.raises(KeyError, match="head/kernel"):
        lora.lora_delta(params, factors)
