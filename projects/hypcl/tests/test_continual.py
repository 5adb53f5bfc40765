"""The continual learners: what trains, what stays frozen, and the metrics."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.hypcl.adapters import Ball, adapt, init_adapters, task_weights
from projects.hypcl.continual import LearnerConfig, make_stream, run_method, summarize
from projects.hypcl.synthetic import SyntheticConfig, make_features


@pytest.fixture(scope="module")
def stream():
    cfg = SyntheticConfig(superclasses=3, subclasses=2, dim=8, noise=1.0, text_noise=0.3,
                          train_per_class=30, test_per_class=10)  # fmt: skip
    return make_stream(*make_features(cfg), num_tasks=3, order_seed=1)


LEARNER = LearnerConfig(steps_per_task=5, batch_size=16, lr=1e-2)


@pytest.mark.parametrize("recompute", [False, True])
def test_prototypes_and_earlier_adapters_stay_frozen_unless_recomputed(stream, recompute):
    seen = []
    cfg = dataclasses.replace(LEARNER, recompute_prototypes=recompute)

    def observe(t, params, protos):
        seen.append((np.asarray(params["m"]), np.asarray(protos)))

    run_method("hypcl_a", stream, cfg, 0, observe=observe)
    (m0, mu0), (m1, mu1), (m2, mu2) = seen
    first = list(stream.tasks[0])
    np.testing.assert_array_equal(m2[0], m0[0])  # adapter 0 untouched by tasks 1 and 2
    np.testing.assert_array_equal(m2[1], m1[1])
    assert not np.allclose(m1[1], np.eye(8))  # the current adapter did train
    if recompute:
        assert not np.allclose(mu2[first], mu0[first])
    else:
        np.testing.assert_array_equal(mu2[first], mu0[first])
        np.testing.assert_array_equal(mu1[list(stream.tasks[1])], mu2[list(stream.tasks[1])])


def test_identity_adapters_leave_features_where_zero_shot_puts_them(stream):
    f = jnp.asarray(stream.test.f[:5])
    routing = {"keys": jnp.asarray(stream.train.f[:6]), "key_task": jnp.array([0, 0, 1, 1, 2, 2]),
               "temperature": jnp.float32(0.01)}  # fmt: skip
    jit_adapt = jax.jit(adapt, static_argnames=("ball", "variant", "alpha"))
    for ball in (Ball(1.0), Ball(1.0, euclidean=True)):
        u = jit_adapt(init_adapters(3, 8), f, 2, ball, "none", 1.0)
        for variant in ("a", "b", "single"):
            z = jit_adapt(init_adapters(3, 8), f, 2, ball, variant, 1.0, routing)
            np.testing.assert_allclose(z, u, atol=1e-5)


def test_key_routing_sends_a_class_key_to_its_task_and_ignores_unseen_tasks():
    keys = jnp.eye(4, 5)
    routing = {"keys": keys, "key_task": jnp.array([0, 1, 2, -1]), "temperature": jnp.float32(0.01)}
    params = init_adapters(3, 5)
    w = task_weights(params, keys, keys, jnp.int32(1), routing, "keys")
    np.testing.assert_allclose(w[0], [1, 0, 0], atol=1e-6)
    np.testing.assert_allclose(w[1], [0, 1, 0], atol=1e-6)
    assert float(w[2, 2]) == 0  # task 2 is not seen yet at task 1


def test_summary_metrics_on_a_hand_made_history():
    nan = np.nan
    history = [np.array([1.0, 0.8, nan, nan]), np.array([0.5, 0.8, 0.9, 0.7])]
    out = summarize(history, ((0, 1), (2, 3)))
    assert out["last"] == pytest.approx(0.725) and out["avg"] == pytest.approx((0.9 + 0.725) / 2)
    assert out["forgetting"] == pytest.approx((0.5 + 0.0) / 2)


def test_stream_relabels_classes_and_text_together(stream):
    cfg = SyntheticConfig(superclasses=3, subclasses=2, dim=8, noise=1.0, text_noise=0.3,
                          train_per_class=30, test_per_class=10)  # fmt: skip
    train, _, text = make_features(cfg)
    # the text row of each relabelled class is the text of the class its images came from
    for new in range(6):
        old = np.unique(train.y[stream.train.y == new])
        assert len(old) == 1 and np.array_equal(stream.text[new], text[old[0]])
    assert stream.tasks == ((0, 1), (2, 3), (4, 5))
    with pytest.raises(ValueError, match="do not split"):
        make_stream(train, train, text, 4, 0)


def test_tangent_clip_is_a_radial_rescale_also_jitted_on_many_rows():
    """The clip once computed |log_0 z| from log_0 z; jitted on >= 5,000 rows that returned 0
    on this CPU backend (eager was right). The radial form must hold at any batch size."""
    import jax

    from projects.hypcl.adapters import clip_tangent

    rng = np.random.default_rng(0)
    v = rng.normal(size=(6000, 16)).astype(np.float32)
    v *= rng.uniform(0.2, 3.0, (6000, 1)) / np.linalg.norm(v, axis=1, keepdims=True)
    for ball in (Ball(1.0), Ball(1.0, euclidean=True)):
        z = jax.jit(lambda x, b=ball: clip_tangent(b, b.exp0(x), 1.0))(v)
        tangent = np.linalg.norm(np.asarray(ball.log0(z)), axis=1)
        np.testing.assert_allclose(tangent, np.minimum(np.linalg.norm(v, axis=1), 1.0), rtol=2e-4)
