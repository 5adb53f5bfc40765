"""Gradient-norm statistics: spike counting against the running median, per-step norms read
back from metrics.jsonl, and the optimizer's schedules."""

import json

import numpy as np
import pytest

from projects.attn_qat.train import PhaseConfig, grad_norms, optimizer, spike_count, stability


def test_spike_count_against_the_running_median():
    flat = np.ones(20)
    assert spike_count(flat) == 0
    one = flat.copy()
    one[10] = 3.01  # just above 3 x the median (1) of the steps before it
    assert spike_count(one) == 1
    one[10] = 3.0  # not strictly above
    assert spike_count(one) == 0
    assert spike_count(4.0 ** np.arange(6)) == 5  # every step > 3 x the median of its past
    # After 50 steps at 10, the window has forgotten the early steps at 1.
    late = np.concatenate([np.ones(5), np.full(60, 10.0), [31.0]])
    # The jump to 10 counts while the median of the past is still 1 (steps 5..9: at step 10
    # the median is 5.5); then 31 > 3 x 10 once the window holds only 10s.
    assert spike_count(late) == 6
    assert spike_count(np.array([1.0])) == 0


def test_stability_summary():
    norms = np.array([1.0, 1.0, 1.0, 4.0, 1.0, 1.0, 1.0, 2.0])
    s = stability(norms, "v")
    assert s["v/gnorm_mean"] == pytest.approx(1.5)
    assert s["v/gnorm_max"] == 4.0
    assert s["v/gnorm_spikes"] == 1.0
    assert s["v/gnorm_last_quarter"] == pytest.approx(1.5)
    assert stability(np.zeros(0), "v") == {}


def test_grad_norms_keep_the_last_record_of_each_step(tmp_path):
    path = tmp_path / "metrics.jsonl"
    records = [
        {"phase": "a", "step": 1, "grad_norm": 1.0},
        {"phase": "a", "step": 2, "grad_norm": 2.0},
        {"phase": "b", "step": 1, "grad_norm": 9.0},
        {"phase": "a", "step": 2, "grad_norm": 5.0},  # the step redone after a resume
        {"phase": "a", "seconds": 3.0},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    np.testing.assert_array_equal(grad_norms(path, "a", 2), [1.0, 5.0])
    with pytest.raises(FileNotFoundError, match="steps \\[3\\]"):
        grad_norms(path, "a", 3)


def test_schedules_warm_up_then_hold_or_decay():
    import jax.numpy as jnp

    params = {"w": jnp.ones((2, 2))}
    grads = {"w": jnp.ones((2, 2))}
    for schedule, last in (("constant", 0.1), ("cosine", None)):
        cfg = PhaseConfig(steps=10, lr=0.1, warmup_steps=2, schedule=schedule, weight_decay=0.0,
                          grad_clip=0.0)  # fmt: skip
        tx = optimizer(cfg)
        state = tx.init(params)
        sizes = []
        for _ in range(10):
            upd, state = tx.update(grads, state, params)
            sizes.append(float(jnp.abs(upd["w"]).max()))
        assert sizes[0] == pytest.approx(0.0, abs=1e-7)  # warm-up starts at lr 0
        assert sizes[2] == pytest.approx(0.1, rel=1e-3)  # Adam's first steps have |update| = lr
        if schedule == "constant":
            assert sizes[-1] == pytest.approx(last, rel=1e-3)
        else:  # cosine over 10 steps: 0.1 * (1 + cos(7 pi / 8)) / 2 at the last step
            assert sizes[-1] == pytest.approx(0.1 * (1 + np.cos(7 * np.pi / 8)) / 2, rel=1e-3)
