"""The gradient-fidelity measurement: the float64 cosine, the closed-form float64 attention
gradients, and what the modes measure on small inputs (through the experiment's entry)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.attn_qat import experiment, tables
from projects.attn_qat.figures import fidelity_figure
from projects.attn_qat.grad_fidelity import (
    FidelityConfig,
    cosine,
    draw_inputs,
    metric_key,
    reference_grads,
)
from shared.config import ConfigError, apply_overrides


def test_cosine_is_float64_numpy_and_resolves_one_minus_cosine():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 64, 3, 16)).astype(np.float32)
    b = (a + 0.3 * rng.standard_normal(a.shape)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = (a64 * b64).sum() / np.sqrt((a64**2).sum() * (b64**2).sum())
    assert cosine(jnp.asarray(a), b) == pytest.approx(expected, rel=1e-14)
    assert cosine(a, -2.5 * a) == pytest.approx(-1.0, abs=1e-15)
    # b = a + eps * u with u orthogonal to a and |u| = |a|: cos = 1 / sqrt(1 + eps^2) exactly,
    # so 1 - cos ~ eps^2 / 2 = 5e-9 (float32 arithmetic would round it to 0).
    a64 = a64.ravel()
    u = rng.standard_normal(a64.shape)
    u -= (u @ a64) / (a64 @ a64) * a64
    u *= np.linalg.norm(a64) / np.linalg.norm(u)
    eps = 1e-4
    assert 1 - cosine(a64, a64 + eps * u) == pytest.approx(1 - 1 / np.sqrt(1 + eps**2), rel=1e-6)


def _naive_attention(q, k, v):
    """Causal softmax attention in float32, [B, L, N, H]."""
    s = jnp.einsum("btnh,bsnh->bnts", q, k, precision="highest") / np.sqrt(q.shape[-1])
    mask = jnp.tril(jnp.ones((q.shape[1], q.shape[1]), bool))
    p = jax.nn.softmax(jnp.where(mask, s, -jnp.inf), axis=-1)
    return jnp.einsum("bnts,bsnh->btnh", p, v, precision="highest")


def test_reference_grads_equal_autodiff_and_ignore_a_constant_key_offset():
    q, k, v, do = jax.random.normal(jax.random.key(1), (4, 1, 48, 2, 32))
    _, vjp = jax.vjp(_naive_attention, q, k, v)
    for ours, autodiff in zip(reference_grads(q, k, v, do), vjp(do)):
        np.testing.assert_allclose(ours, autodiff, rtol=1e-4, atol=1e-5)
    # Adding one vector to every key shifts each row of logits by a constant: the float64
    # gradients do not move (what makes 'k_outliers' a stress test of quantization only).
    shifted = np.asarray(k, np.float64) + np.where(np.arange(32) % 8 == 0, 10.0, 0.0)
    for a, b in zip(reference_grads(q, shifted, v, do), reference_grads(q, k, v, do)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_k_outliers_shift_only_the_chosen_channels():
    cfg = FidelityConfig(num_heads=1, head_dim=32, outlier_channels=4, dtype="float32")
    key = jax.random.key(3)
    (_, k0, *_), (_, k1, *_) = (draw_inputs(key, cfg, 32, d) for d in ("gaussian", "k_outliers"))
    diff = np.asarray(k1 - k0)
    np.testing.assert_allclose(diff[..., [0, 8, 16, 24]], 10.0, rtol=1e-6)
    assert not np.delete(diff, [0, 8, 16, 24], axis=-1).any()


def test_modes_measured_through_the_experiment_entry(tmp_path):
    cfg = apply_overrides(
        experiment.CONFIGS["grad_fidelity"],
        [
            "fidelity.lengths=(64,)",
            "fidelity.num_heads=1",
            "fidelity.head_dim=32",
            "fidelity.modes=('bf16', 'fp4_ptq', 'drop_in_qat', 'attn_qat')",
        ],
    )
    metrics = experiment.run(cfg, tmp_path)
    cosines = {k: v for k, v in metrics.items() if "_cos_" in k}
    assert len(cosines) == 4 * 2 * 3 and all(-1 <= v <= 1 for v in cosines.values())
    # Only Attn-QAT (of these modes) quantizes P for dV; at 64 keys fq(P) keeps most of its mass.
    kept = {k: v for k, v in metrics.items() if "_p_mass_kept_" in k}
    assert set(kept) == {f"attn_qat/{d}_p_mass_kept_L64" for d in ("gaussian", "k_outliers")}
    assert all(0.9 < v < 1.1 for v in kept.values()), kept
    for dist in ("gaussian", "k_outliers"):
        for t in ("dq", "dk", "dv"):
            bf16, ptq = (metrics[metric_key(m, dist, t, 64)] for m in ("bf16", "fp4_ptq"))
            # bf16: no quantization, only the bf16 rounding of each gradient (relative error
            # <= 2^-9 per element, so 1 - cos <= 2^-19); FP4 rounds Q, K, V, P to 1-bit mantissas.
            assert 1 - bf16 < 2.0**-19 and ptq < bf16, (dist, t, bf16, ptq)
            # PTQ's gradient is drop-in QAT's by definition: the same numbers.
            assert ptq == metrics[metric_key("drop_in_qat", dist, t, 64)]
    # The figure of the table, from run directories holding these metrics.
    (tmp_path / "results.json").write_text(json.dumps(metrics))
    written = fidelity_figure(tables.GRAD_FIDELITY, {((), 0): tmp_path}, tmp_path)
    assert [p.name for p in written] == ["grad_fidelity.png"] and written[0].stat().st_size > 0


def test_bad_fidelity_fields_are_named():
    cfg = experiment.CONFIGS["grad_fidelity"]
    with pytest.raises(ConfigError, match="fidelity.head_dim"):
        apply_overrides(cfg, ["fidelity.head_dim=40"])
    with pytest.raises(ConfigError, match="fidelity.modes"):
        apply_overrides(cfg, ["fidelity.modes=('fp8',)"])
