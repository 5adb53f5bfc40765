"""A phase through the shared LM trainer: its schedules are the shared warm-up + cosine (equal to
the optax schedules they replaced), and each phase resumes from its own checkpoints only."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from projects.attn_qat.train import PhaseConfig, schedule, train_phase
from shared.models.llama import SIZES, Llama
from shared.train import latest_checkpoint_step


def _replaced(cfg: PhaseConfig) -> optax.Schedule:
    """The hand-built optax schedules attn_qat used before the shared `warmup_cosine`."""
    warm = max(cfg.warmup_steps, 1)
    if cfg.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(0.0, cfg.lr, warm, max(cfg.steps, warm + 1))
    return optax.join_schedules(
        [optax.linear_schedule(0.0, cfg.lr, warm), optax.constant_schedule(cfg.lr)], [warm]
    )


@pytest.mark.parametrize("kind", ["cosine", "constant"])
@pytest.mark.parametrize("steps,warmup", [(10, 0), (10, 2), (10, 9), (3, 0), (240, 24)])
def test_shared_schedule_equals_the_replaced_one_on_every_step(kind, steps, warmup):
    cfg = PhaseConfig(steps=steps, lr=3e-3, warmup_steps=warmup, schedule=kind)
    for t in range(steps):  # the steps the optimizer runs: 0 .. steps - 1
        assert np.float32(schedule(cfg)(jnp.int32(t))) == np.float32(_replaced(cfg)(jnp.int32(t)))


def test_a_warm_up_as_long_as_the_phase_now_reaches_the_peak():
    # The one change: warmup_steps == steps used to stop short of lr; the shared schedule ends
    # the warm-up one step earlier so the last step runs at the peak.
    cfg = PhaseConfig(steps=4, lr=1.0, warmup_steps=4)
    assert [float(_replaced(cfg)(t)) for t in range(4)] == [0.0, 0.25, 0.5, 0.75]
    assert [float(schedule(cfg)(t)) for t in range(4)] == pytest.approx([0.0, 1 / 3, 2 / 3, 1.0])


def test_each_phase_resumes_from_its_own_checkpoints(tmp_path):
    windows = np.random.default_rng(0).integers(0, 257, (16, 9)).astype(np.int32)
    cfg = PhaseConfig(steps=3, batch_size=4, lr=1e-3, warmup_steps=1)
    new = lambda: Llama(dataclasses.replace(SIZES["nano"], vocab_size=257), rngs=nnx.Rngs(0))
    phase = lambda model, name: train_phase(
        model, windows, cfg, seed=1, name=name, workdir=tmp_path, checkpoints=True
    )
    a = new()
    norms_a = phase(a, "pretrain")
    assert len(norms_a) == 3 and (norms_a > 0).all()
    assert latest_checkpoint_step(tmp_path / "checkpoints" / "pretrain") == 3
    norms_b = phase(new(), "finetune_x")  # another phase in the same workdir trains its own steps
    np.testing.assert_array_equal(norms_b, norms_a)  # same start, data and optimizer
    lines = (tmp_path / "metrics.jsonl").read_text().count("\n")
    again = new()
    np.testing.assert_array_equal(phase(again, "pretrain"), norms_a)  # restored, not retrained
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == lines
    for x, y in zip(jax.tree.leaves(nnx.state(a)), jax.tree.leaves(nnx.state(again))):
        np.testing.assert_array_equal(x, y)
    records = [json.loads(r) for r in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert {r["phase"] for r in records} == {"pretrain", "finetune_x"}
