"""What LFPM adds (spec section 6): the path integral with S = 1 is the single-point loss; the
accumulated gradient over S points is the gradient of the averaged loss; CTL is exact for a
linear encoder; ASR excludes target-class inputs; the trigger is idempotent and local; pruning
and negation act on task vectors as documented."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from projects.lfpm import ctl, defenses, lfpm, tasks
from projects.lfpm.model import Delta, attack_success_rate


class _MLPEncoder:
    """A tiny nonlinear encoder with "kernel" leaves: the objective's algebra does not depend
    on the architecture, and this compiles in a fraction of the CNN's time."""

    dim = 5

    @staticmethod
    def features(p, x):  # x: [b, 4, 4, 1] -> [b, 5]
        h = jnp.tanh(x.reshape(x.shape[0], -1) @ p["l1"]["kernel"] + p["l1"]["bias"])
        return h @ p["l2"]["kernel"]


@pytest.fixture(scope="module")
def setup():
    # NumPy draws: jax.random.normal compiles anew for every shape (~0.4 s each here)
    encoder, rng = _MLPEncoder(), np.random.default_rng(0)
    theta_m = {"l1": {"kernel": _normal(rng, (16, 6)) / 4, "bias": jnp.zeros(6)},
               "l2": {"kernel": _normal(rng, (6, 5)) / 2}}  # fmt: skip
    xs = tuple(jnp.asarray(rng.uniform(size=(6, 4, 4, 1)), jnp.float32) for _ in range(3))
    ys = (jnp.arange(6) % 4, jnp.arange(6) % 3, jnp.arange(6) % 2)
    heads = tuple({"w": _normal(rng, (5, k)) / np.sqrt(5), "b": jnp.zeros(k)} for k in (4, 3, 2))
    data = {"anchor": theta_m, "heads": heads, "x": xs, "y": ys}
    # jitted: op by op, each eager operation compiles on its own
    make = jax.jit(lambda d, k: lfpm.make_batch({**d, "attacked": 1}, k, 4, 2, encoder.features))
    batch = {**make(data, jax.random.key(3)), "attacked": 1}
    return encoder, theta_m, batch


def _normal(rng: np.random.Generator, shape) -> jax.Array:
    return jnp.asarray(rng.normal(size=shape), jnp.float32)


def _random_delta(delta: Delta, seed: int):
    """A nonzero τ_a of the parametrization (LoRA B drawn too), so that s matters."""
    rng = np.random.default_rng(seed)
    shapes = jax.eval_shape(delta.init, jax.random.key(0))
    return jax.tree.map(lambda x: 0.05 * _normal(rng, x.shape), shapes)


@pytest.mark.parametrize("kind", ["full", "lora"])
def test_one_path_point_is_the_single_point_loss(setup, kind):
    encoder, theta_m, batch = setup
    delta = Delta(kind, theta_m, rank=2)
    params = _random_delta(delta, 1)
    one = jax.jit(lambda p: lfpm.path_loss(encoder.features, delta.dense, p, batch, 1, 0.7))
    single = jax.jit(lambda p, s: lfpm.point_loss(encoder.features, delta.dense, p, batch, s, 0.7))
    one, single = one(params), single(params, jnp.float32(1.0))
    assert float(one) == float(single)
    np.testing.assert_array_equal(lfpm.path_points(1), [1.0])
    np.testing.assert_allclose(lfpm.path_points(4), [0.25, 0.5, 0.75, 1.0])


@pytest.mark.parametrize("kind", ["full", "lora"])
def test_accumulated_gradient_is_the_gradient_of_the_averaged_loss(setup, kind):
    encoder, theta_m, batch = setup
    delta = Delta(kind, theta_m, rank=2)
    params = _random_delta(delta, 2)
    loss, grads = jax.jit(
        lambda p: lfpm.accumulated_grad(encoder.features, delta.dense, p, batch, 3, 0.7)
    )(params)
    want_loss, want = jax.jit(jax.value_and_grad(
        lambda p: lfpm.path_loss(encoder.features, delta.dense, p, batch, 3, 0.7)
    ))(params)  # fmt: skip
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    for g, w in zip(jax.tree.leaves(grads), jax.tree.leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
    assert any(float(jnp.abs(g).max()) > 0 for g in jax.tree.leaves(grads))


def test_point_loss_at_s_zero_is_clean_ce_plus_backdoor_ce_of_the_merged_model(setup):
    """At s = 0 the feature anchor vanishes: what is left is CE on D_c and on x̃ (true labels)."""
    encoder, theta_m, batch = setup
    delta = Delta("full", theta_m)
    params = _random_delta(delta, 4)
    point = jax.jit(lambda p: lfpm.point_loss(encoder.features, delta.dense, p, batch, 0.0, 2.0))
    got = point(params)

    @jax.jit
    def ce(h, x, y):
        lg = encoder.features(theta_m, x) @ h["w"] + h["b"]
        return optax.softmax_cross_entropy_with_integer_labels(lg, y).mean()

    clean = np.mean([ce(h, x, y) for h, x, y in zip(batch["heads"], batch["x"], batch["y"])])
    bd = ce(batch["heads"][1], batch["x_bd"], batch["y_bd"])
    np.testing.assert_allclose(got, bd + 2.0 * clean, rtol=1e-5)
    # the triggered batch is the attacked task's batch with the corner set, true labels kept
    np.testing.assert_array_equal(batch["y_bd"], batch["y"][1])
    np.testing.assert_array_equal(batch["x_bd"][:, -2:, -2:], 1.0)


def test_ctl_error_is_zero_for_a_linear_encoder_and_positive_for_a_relu_one():
    rng = np.random.default_rng(0)
    w1, w2 = (jnp.asarray(rng.normal(size=(6, 4)), jnp.float32) for _ in range(2))
    x = jnp.asarray(rng.normal(size=(10, 6)), jnp.float32)

    def linear(p, x):
        h = x @ p["w"]
        return {"l0": h, "l1": h @ jnp.ones((4, 3))}

    errs = ctl.ctl_errors(linear, {"w": w1}, {"w": w2}, x, (0.0, 0.3, 0.5, 1.0))
    assert set(errs) == {"l0", "l1"}
    assert max(max(v) for v in errs.values()) < 1e-6

    def relu_net(p, x):
        return {"out": jax.nn.relu(x @ p["w"]) @ p["w"].T}

    errs = ctl.ctl_errors(relu_net, {"w": w1}, {"w": w2}, x, (0.0, 0.5, 1.0))
    assert errs["out"][0] < 1e-6 and errs["out"][2] < 1e-6 and errs["out"][1] > 1e-2


def test_asr_excludes_target_class_inputs():
    y = np.array([0, 0, 1, 2, 3])
    pred = np.array([0, 0, 0, 2, 0])  # both target-class inputs predicted as the target
    assert attack_success_rate(pred, y, target=0) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="target"):
        attack_success_rate(pred[:2], y[:2], target=0)


def test_trigger_is_idempotent_and_touches_only_the_corner():
    x = np.random.default_rng(0).uniform(size=(4, 28, 28, 1)).astype(np.float32) * 0.5
    xt = tasks.triggered(x, 3)
    np.testing.assert_array_equal(tasks.triggered(xt, 3), xt)
    np.testing.assert_array_equal(xt[:, -3:, -3:], 1.0)
    changed = (xt != x).any(axis=(0, 3))
    assert changed[-3:, -3:].all() and changed.sum() == 9


def test_pruning_zeroes_the_smallest_share_of_the_merged_task_vector():
    theta0 = {"a": np.zeros(4, np.float32), "b": np.ones(2, np.float32)}
    theta_m = {"a": np.array([0.1, -3.0, 0.2, 5.0], np.float32), "b": np.array([1.5, 0.0])}
    out = defenses.prune_task_vector(theta0, theta_m, fraction=0.5)
    # τ_m = [0.1, -3, 0.2, 5 | 0.5, -1]: d = 6, keep 0.5 -> k = 3, t = 0.5 -> |τ| >= 0.5 kept
    np.testing.assert_allclose(out["a"], [0.0, -3.0, 0.0, 5.0])
    np.testing.assert_allclose(out["b"], [1.5, 0.0])
