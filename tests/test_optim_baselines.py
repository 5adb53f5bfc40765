"""Baselines of the SCALE comparison: GaLore and APOLLO-Mini closed forms, routing, memory."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from shared.models.llama import SIZES, Llama
from shared.optim import NAMES, OptimizerOptions, make_optimizer, optimizer_memory, tree_bytes
from shared.optim.apollo import scale_by_apollo_mini
from shared.optim.baselines import lowrank_labels
from shared.optim.galore import scale_by_galore
from shared.optim.labels import path_name


@pytest.mark.parametrize("shape", [(8, 20), (20, 8)])
def test_galore_projects_the_smaller_side_and_first_step_closed_form(shape):
    """Step 1 of Adam is sign(R) (eps aside), so the update is alpha * P sign(P^T G) (left) or
    alpha * sign(G P) P^T (right), with P the top-r singular vectors of the smaller side."""
    g = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    tx = scale_by_galore(rank=3, update_gap=5, alpha=0.25, eps=1e-12)
    state = tx.init({"w": jnp.asarray(g)})
    small = min(shape)
    assert state.projector["w"].shape == (small, 3)
    assert state.mu["w"].shape == ((3, shape[1]) if shape[0] <= shape[1] else (shape[0], 3))
    u, state = tx.update({"w": jnp.asarray(g)}, state)
    uu, _, vt = np.linalg.svd(g.astype(np.float64), full_matrices=False)
    if shape[0] <= shape[1]:
        p = uu[:, :3]
        expected = 0.25 * p @ np.sign(p.T @ g)
    else:
        p = vt[:3].T
        expected = 0.25 * np.sign(g @ p) @ p.T
    np.testing.assert_allclose(np.asarray(u["w"]), expected, rtol=1e-4, atol=1e-5)


def test_apollo_mini_is_a_scaled_gradient_with_a_norm_growth_limit():
    rng = np.random.default_rng(1)
    g1 = rng.normal(size=(12, 30)).astype(np.float32)
    tx = scale_by_apollo_mini(update_gap=10, gamma=1.01)
    state = tx.init({"w": jnp.asarray(g1)})
    assert state.mu["w"].shape == (1, 30)  # rank 1 on the smaller side
    u1, state = tx.update({"w": jnp.asarray(g1)}, state)
    ratio = np.asarray(u1["w"]) / g1
    np.testing.assert_allclose(ratio, ratio.flat[0], rtol=1e-5)  # tensor-wise: one scalar
    # step 1: R_adam = sign(R) (rank 1: n entries of +-1), so s = sqrt(n) / ||R||; alpha*s > 0
    assert ratio.flat[0] > 0
    # Adam's normalization makes a rescaled gradient give the same-size update, so the limiter
    # is tested from a stored previous norm 100x smaller than this step's
    n1 = float(np.linalg.norm(u1["w"]))
    small = state._replace(last_norm={"w": jnp.float32(0.01 * n1)})
    u2, after = tx.update({"w": jnp.asarray(g1)}, small)
    np.testing.assert_allclose(np.linalg.norm(u2["w"]), 1.01 * 0.01 * n1, rtol=1e-5)
    np.testing.assert_allclose(float(after.last_norm["w"]), 1.01 * 0.01 * n1, rtol=1e-5)
    free, _ = tx.update({"w": jnp.asarray(g1)}, state._replace(last_norm={"w": jnp.float32(1e9)}))
    assert np.linalg.norm(free["w"]) > 0.5 * n1  # no clipping below the limit


@pytest.fixture(scope="module")
def nano():
    model = Llama(SIZES["nano"], rngs=nnx.Rngs(0))
    return nnx.state(model, nnx.Param)


def test_lowrank_routing_keeps_embeddings_head_and_norms_on_adamw(nano):
    labels = {
        path_name(p): lab for p, lab in jax.tree_util.tree_leaves_with_path(lowrank_labels(nano))
    }
    adamw = {n for n, lab in labels.items() if lab == "adamw"}
    assert "embed_tokens/embedding" in adamw and "lm_head/kernel" in adamw
    assert all(
        ("norm" in n or "layernorm" in n)
        for n in adamw - {"embed_tokens/embedding", "lm_head/kernel"}
    )
    assert sum(lab == "lowrank" for lab in labels.values()) == 14


def test_memory_closed_forms(nano):
    n = sum(x.size for x in jax.tree.leaves(nano))
    assert tree_bytes(nano) == 4 * n
    adam = optimizer_memory(make_optimizer("adamw", 1e-3, 10), nano)
    assert adam.state_bytes - adam.counter_bytes == 8 * n
    sgd = optimizer_memory(make_optimizer("sgd", 1e-3, 10), nano)
    assert sgd.state_bytes == sgd.counter_bytes  # no buffers at all
    mom = optimizer_memory(make_optimizer("sgd_momentum", 1e-3, 10), nano)
    assert mom.state_bytes - mom.counter_bytes == 4 * n
    half = optimizer_memory(make_optimizer("adamw", 1e-3, 10), nano, jnp.bfloat16)
    assert half.param_bytes == 2 * n and half.state_bytes - half.counter_bytes == 4 * n


def test_every_optimizer_takes_a_finite_step_that_lowers_a_quadratic():
    shapes = {
        "embed_tokens": {"embedding": (20, 8)},
        "layers": {
            "0": {
                "input_layernorm": {"weight": (8,)},
                "self_attn": {"q_proj": {"kernel": (8, 8)}},
                "mlp": {"up_proj": {"kernel": (8, 12)}},
            }
        },
        "lm_head": {"kernel": (8, 20)},
    }
    keys = iter(jax.random.split(jax.random.key(0), 5))
    params = jax.tree.map(
        lambda s: jax.random.normal(next(keys), s), shapes, is_leaf=lambda x: isinstance(x, tuple)
    )
    loss = lambda p: sum(jnp.sum(x**2) for x in jax.tree.leaves(p))  # noqa: E731
    for name in NAMES:
        tx = make_optimizer(name, 1e-3, 4, OptimizerOptions(galore_rank=4, projection_gap=2))
        p, state = params, tx.init(params)
        for _ in range(2):  # eager: a dozen compilations would dominate the test's time
            u, state = tx.update(jax.grad(loss)(p), state, p)
            p = optax.apply_updates(p, u)
        assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(p)), name
        assert float(loss(p)) < float(loss(params)), name
