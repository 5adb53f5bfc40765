"""VAR's quantizer pieces against the spec's section 6: exact resamplings, the residual
identity, straight-through, teacher forcing, the block-causal mask, and DPO's closed forms."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from projects.var_sr.dpo import dpo_regularizer, sequence_log_prob
from projects.var_sr.quantizer import MultiScaleRQ, block_causal_mask, phi_index
from projects.var_sr.resize import area_matrix, bicubic_matrix, resize

PATCH_NUMS = (1, 2, 3, 4, 6, 8)


def _features(side=8, dim=4, seed=0):
    return jax.random.normal(jax.random.key(seed), (2, side, side, dim))


def test_resamplings_match_pytorch_definitions():
    np.testing.assert_allclose(area_matrix(4, 2), [[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]])
    # 5 -> 3 overlapping bins: [0, 2), [1, 4), [3, 5)
    np.testing.assert_allclose(area_matrix(5, 3), [[.5, .5, 0, 0, 0], [0, 1 / 3, 1 / 3, 1 / 3, 0],
                                                   [0, 0, 0, .5, .5]])  # fmt: skip
    np.testing.assert_allclose(bicubic_matrix(6, 6), np.eye(6), atol=1e-15)
    np.testing.assert_allclose(bicubic_matrix(1, 4), np.ones((4, 1)))
    up = bicubic_matrix(2, 4)  # PyTorch: F.interpolate(mode="bicubic", align_corners=False)
    np.testing.assert_allclose(up.sum(1), 1.0)
    # [0, 1] upsampled by PyTorch is [-0.1055, 0.2266, 0.7734, 1.1055]: overshoot at the edges
    np.testing.assert_allclose(up @ np.array([0.0, 1.0]), [-0.10546875, 0.2265625, 0.7734375,
                                                           1.10546875])  # fmt: skip
    x = jnp.arange(16.0).reshape(1, 4, 4, 1)
    np.testing.assert_allclose(resize(x, 2, 2, "area")[0, :, :, 0], [[2.5, 4.5], [10.5, 12.5]])


def test_phi_ticks_follow_the_official_partial_sharing():
    # ticks 1/12, 13/36, 23/36, 11/12; k = 2 and k = 7 of 10 scales sit exactly halfway between
    # two ticks, where the float64 distances of the official expression decide (pinned here)
    assert [phi_index(k, 10) for k in range(10)] == [0, 0, 1, 1, 1, 2, 2, 3, 3, 3]
    assert [phi_index(k, 4) for k in range(4)] == [0, 1, 2, 3]


def test_bypassed_quantizer_reconstructs_f_exactly_at_the_last_scale():
    rq = MultiScaleRQ(4, 16, PATCH_NUMS, rngs=nnx.Rngs(0))
    f = _features()
    _, _, _, partial = nnx.jit(lambda m, x: m(x, bypass=True))(rq, f)
    np.testing.assert_allclose(partial[-1], f, atol=1e-5)
    errors = [float(jnp.linalg.norm(f - p)) for p in partial]
    assert errors[-1] < 1e-4 < errors[0]


def test_straight_through_gradient_is_the_identity():
    rq = MultiScaleRQ(4, 16, PATCH_NUMS, rngs=nnx.Rngs(0))
    f = _features(seed=1)
    g = nnx.jit(lambda m, x: jax.grad(lambda y: jnp.sum(m(y)[0] * 3.0))(x))(rq, f)
    np.testing.assert_allclose(g, 3.0)
    out, codes, loss, partial = nnx.jit(lambda m, x: m(x))(rq, f)
    np.testing.assert_allclose(out, partial[-1], atol=1e-5)  # forward value is f_hat
    assert [c.shape for c in codes] == [(2, p, p) for p in PATCH_NUMS] and float(loss) > 0


def test_teacher_forcing_inputs_rebuild_the_quantizers_own_sequence():
    rq = MultiScaleRQ(4, 16, PATCH_NUMS, rngs=nnx.Rngs(0))
    f = _features(seed=2)
    _, codes, _, partial = nnx.jit(lambda m, x: m(x))(rq, f)
    decoded = nnx.jit(lambda m, c: m.decode_codes(c, 8))(rq, codes)
    for a, b in zip(decoded, partial):
        np.testing.assert_allclose(a, b, atol=1e-5)
    inputs = nnx.jit(lambda m, c: m.teacher_inputs(c, 8))(rq, codes)
    assert len(inputs) == len(PATCH_NUMS) - 1
    for k, x in enumerate(inputs, start=1):  # input of scale k: f_hat after scales < k, pooled
        np.testing.assert_allclose(x, resize(partial[k - 1], PATCH_NUMS[k], PATCH_NUMS[k],
                                             "area"), atol=1e-5)  # fmt: skip


def test_block_causal_mask_sees_its_own_and_coarser_scales_only():
    m = block_causal_mask((1, 2, 3))
    assert m.shape == (14, 14)
    scale = np.array([0] + [1] * 4 + [2] * 9)
    for i in range(14):
        np.testing.assert_array_equal(m[i], scale <= scale[i])
    assert m[1, 4] and not m[1, 5]  # within a scale: later positions too; never a finer scale


def test_dpo_closed_forms_and_gradient_direction():
    lw, ll = jnp.array([-3.0, -5.0]), jnp.array([-4.0, -2.0])
    reg = dpo_regularizer(lw, ll, lw, ll, beta=0.5, lam=0.7)  # pi = pi_ref
    assert float(reg) == pytest.approx(0.7 * np.log(2))
    gw, gl = jax.grad(lambda w, lo: dpo_regularizer(w, lo, None, None, 0.5, 1.0), (0, 1))(lw, ll)
    assert np.all(gw < 0) and np.all(gl > 0)  # descent raises log pi(y_w), lowers log pi(y_l)
    with pytest.raises(ValueError, match="both"):
        dpo_regularizer(lw, ll, lw, None, 0.5, 1.0)
    logits = jnp.log(jnp.array([[[0.5, 0.5], [0.9, 0.1]]]))
    lp = sequence_log_prob(logits, jnp.array([[0, 1]]), jnp.array([[False, True]]))
    assert float(lp[0]) == pytest.approx(np.log(0.1), rel=1e-6)
