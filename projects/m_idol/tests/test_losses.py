"""The objectives (spec sec. 6): closed forms and float64 NumPy references."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.m_idol import losses

# jitted once each: eager dispatch compiles every primitive separately (seconds per test)
route_loss = jax.jit(losses.route_loss)
separation_loss = jax.jit(losses.separation_loss)
dino_loss = jax.jit(losses.dino_loss)
update_centres = jax.jit(losses.update_centres)


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _entropy(p, axis=-1):
    return -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), axis=axis)


@pytest.mark.parametrize("num", [2, 5])
def test_route_loss_closed_forms(num):
    tol = 4e-6  # float32: ~20 ulps of log E ~ 1.6, summed over E terms and averaged over rows
    one_hot = np.tile(np.eye(num, dtype=np.float32), (3, 1))  # confident, balanced
    assert float(route_loss(jnp.asarray(one_hot))) == pytest.approx(-np.log(num), abs=tol)
    uniform = np.full((12, num), 1 / num, np.float32)  # every sample unsure: I(expert; x) = 0
    assert float(route_loss(jnp.asarray(uniform))) == pytest.approx(0.0, abs=tol)
    collapsed = np.zeros((12, num), np.float32)
    collapsed[:, 0] = 1  # confident but all to one expert: no information either
    assert float(route_loss(jnp.asarray(collapsed))) == pytest.approx(0.0, abs=tol)


def test_route_loss_matches_a_float64_reference():
    r = _softmax(np.random.default_rng(0).normal(size=(32, 5)) * 2)
    want = -_entropy(r.mean(0)) + _entropy(r).mean()
    got = float(route_loss(jnp.asarray(r, jnp.float32)))
    assert got == pytest.approx(want, abs=2e-6)


def test_separation_loss_zero_for_orthogonal_subspaces_and_maximal_for_shared():
    rng = np.random.default_rng(1)
    num, dim, r = 5, 64, 12
    basis = np.linalg.qr(rng.normal(size=(dim, dim)))[0]
    mix = rng.normal(size=(num, r, r))  # any invertible mixing keeps each subspace
    ortho = np.stack([basis[:, e * r : (e + 1) * r] @ mix[e] for e in range(num)])
    # float32 overlaps ~1e-6 per entry, squared and summed over 20 x 144 entries: << 1e-7
    assert float(separation_loss(jnp.asarray(ortho, jnp.float32))) == pytest.approx(0, abs=1e-7)
    shared = np.stack([basis[:, :r] @ mix[e] for e in range(num)])
    assert float(separation_loss(jnp.asarray(shared, jnp.float32))) == pytest.approx(
        num * (num - 1) * r, rel=1e-5
    )


def test_separation_loss_matches_a_float64_reference_and_has_finite_gradients():
    w = np.random.default_rng(2).normal(size=(3, 16, 4))
    p = [np.linalg.qr(w[e])[0] for e in range(3)]
    want = sum(np.sum((p[a].T @ p[b]) ** 2) for a in range(3) for b in range(3) if a != b)
    w32 = jnp.asarray(w, jnp.float32)
    assert float(separation_loss(w32)) == pytest.approx(want, rel=1e-5)
    g = jax.jit(jax.grad(losses.separation_loss))(w32)
    assert np.all(np.isfinite(np.asarray(g))) and float(jnp.abs(g).max()) > 0


def test_dino_loss_matches_a_float64_reference_and_teacher_gets_no_gradient():
    rng = np.random.default_rng(3)
    s, t = rng.normal(size=(4, 6, 10)), rng.normal(size=(2, 6, 10))
    c = rng.normal(size=(6, 10)) * 0.1
    tp = _softmax((t - c) / 0.04)
    log_s = np.log(_softmax(s / 0.1))
    pairs = [(g, v) for g in range(2) for v in range(4) if g != v]
    want = np.mean([-(tp[g] * log_s[v]).sum(-1).mean() for g, v in pairs])
    args = [jnp.asarray(a, jnp.float32) for a in (s, t, c)]
    assert float(dino_loss(*args)) == pytest.approx(want, rel=1e-5)
    g_s, g_t, g_c = jax.jit(jax.grad(losses.dino_loss, argnums=(0, 1, 2)))(*args)
    assert float(jnp.abs(g_s).max()) > 0
    assert float(jnp.abs(g_t).max()) == 0 and float(jnp.abs(g_c).max()) == 0


def test_dino_loss_is_the_teacher_entropy_when_student_equals_teacher():
    rng = np.random.default_rng(4)
    t, c = rng.normal(size=(1, 8, 16)), rng.normal(size=(8, 16)) * 0.3
    # the student's sharpened distribution equals the teacher's: s / 0.1 = (t - c) / 0.04
    s = np.concatenate([rng.normal(size=(1, 8, 16)), (t - c) * 0.1 / 0.04])  # view 1 matches
    got = dino_loss(*(jnp.asarray(a, jnp.float32) for a in (s, t, c)))
    assert float(got) == pytest.approx(_entropy(_softmax((t[0] - c) / 0.04)).mean(), rel=1e-5)


def test_centring_drives_each_experts_mean_teacher_logit_to_zero():
    rng = np.random.default_rng(5)
    centres = jnp.zeros((2, 8))
    expert = jnp.asarray(np.arange(16) % 2)
    offsets = np.array([5.0, -3.0])[np.arange(16) % 2][None, :, None]  # expert-specific bias
    for _ in range(150):
        logits = jnp.asarray(offsets + rng.normal(size=(2, 16, 8)) * 0.1, jnp.float32)
        centres = update_centres(centres, logits, expert, 0.9)
    centred = np.asarray(logits) - np.asarray(centres)[np.asarray(expert)]
    for e in range(2):
        assert abs(centred[:, np.asarray(expert) == e].mean()) < 0.05  # noise mean ~0.1 / 8
    # an expert that receives no sample keeps its centre
    kept = update_centres(centres, logits, jnp.zeros(16, jnp.int32), 0.9)
    np.testing.assert_array_equal(np.asarray(kept[1]), np.asarray(centres[1]))


def test_ema_momentum_schedule_and_update_formula():
    total = 100
    for step in (0, 25, 50, 100):
        want = 1 - (1 - 0.996) * (np.cos(np.pi * step / total) + 1) / 2
        assert float(losses.ema_momentum(step, total)) == pytest.approx(want, abs=1e-7)
    assert float(losses.ema_momentum(0, total)) == pytest.approx(0.996)
    assert float(losses.ema_momentum(total, total)) == pytest.approx(1.0)
    teacher, student = {"w": jnp.array([1.0, 2.0])}, {"w": jnp.array([3.0, -2.0])}
    new = losses.ema_update(teacher, student, 0.75)
    np.testing.assert_allclose(np.asarray(new["w"]), [1.5, 1.0])
