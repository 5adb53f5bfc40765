import json
import os
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shared.data.pipeline import batch_iterator
from shared.train import (
    NonFiniteLossError,
    Preempted,
    latest_checkpoint_step,
    preemption,
    train_loop,
)
from shared.train import loop as loop_module
from shared.train.checkpoint import Checkpointer, CheckpointError

DATA = {"x": np.random.default_rng(0).standard_normal((40, 3)).astype(np.float32)}


@jax.jit
def _step(state, batch):
    w = state["w"] - 0.1 * jnp.mean(batch["x"], 0) * state["w"]
    return {"w": w, "n": state["n"] + 1}, {"loss": jnp.sum(w**2)}


def step_fn(state, batch, step):
    return _step(state, batch)


def init():
    return {"w": jnp.ones(3), "n": jnp.int32(0)}


def run(tmp, steps, fn=step_fn, every=0, log_every=2, state=None):
    return train_loop(
        state=init() if state is None else state,
        step_fn=fn,
        batches=batch_iterator(DATA, 8, seed=1),
        num_steps=steps,
        checkpoint_dir=tmp,
        checkpoint_every=every,
        metrics_path=tmp / "metrics.jsonl",
        log_every=log_every,
    )


def rows(tmp):
    """metrics.jsonl without the wall-clock field."""
    out = [json.loads(line) for line in (tmp / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "items_per_s"} for r in out]


def test_interrupted_run_resumes_to_the_same_state(tmp_path):
    full = run(tmp_path / "a", 12)

    def crash_at_11(state, batch, step):
        if step == 10:
            raise KeyboardInterrupt  # stands in for a kill after the step-8 checkpoint
        return step_fn(state, batch, step)

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", 12, crash_at_11, every=4)
    assert latest_checkpoint_step(tmp_path / "b") == 8
    assert [r["step"] for r in rows(tmp_path / "b")] == [2, 4, 6, 8, 10]  # 10 is past the ckpt
    resumed = run(tmp_path / "b", 12)
    np.testing.assert_array_equal(resumed["w"], full["w"])
    assert int(resumed["n"]) == 12  # 8 restored + 4 new steps, not 12 new ones
    assert rows(tmp_path / "b") == rows(tmp_path / "a")  # no duplicated step 10
    assert len(rows(tmp_path / "a")) == 6


def test_sigterm_mid_interval_resumes_to_the_same_log_rows(tmp_path, capsys):
    run(tmp_path / "a", 12, log_every=4)

    def term_at_6(state, batch, step):
        if step == 5:
            os.kill(os.getpid(), signal.SIGTERM)
        return step_fn(state, batch, step)

    with pytest.raises(Preempted, match="step 6; checkpoint saved"):
        run(tmp_path / "b", 12, term_at_6, log_every=4)
    assert [r["step"] for r in rows(tmp_path / "b")] == [4]  # steps 5-6 wait in the checkpoint
    run(tmp_path / "b", 12, log_every=4)
    assert "resuming from step 6 of checkpoint" in capsys.readouterr().err
    assert rows(tmp_path / "b") == rows(tmp_path / "a")  # rows at 4, 8, 12 with the same means


def test_sigterm_saves_a_checkpoint_and_raises_preempted(tmp_path):
    def term_at_3(state, batch, step):
        if step == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return step_fn(state, batch, step)

    with pytest.raises(Preempted, match="step 4"):
        run(tmp_path, 100, term_at_3)
    assert latest_checkpoint_step(tmp_path) == 4
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handler restored


def test_nan_loss_stops_naming_the_step(tmp_path):
    def nan_at_5(state, batch, step):
        state, m = step_fn(state, batch, step)
        return state, {"loss": jnp.where(step >= 5, jnp.nan, m["loss"])}

    with pytest.raises(NonFiniteLossError, match="at step 6 .*no checkpoint"):
        run(tmp_path, 20, nan_at_5)


def test_a_poisoned_state_is_never_saved(tmp_path):
    """Checkpoints between log rows: the steps since the last row are checked before a save."""

    def nan_from_8(state, batch, step):
        state, m = step_fn(state, batch, step)
        return state, {"loss": jnp.where(step >= 7, jnp.nan, m["loss"])}

    msg = r"at step 8 .*last good checkpoint is step 5"
    with pytest.raises(NonFiniteLossError, match=msg):
        run(tmp_path / "a", 40, nan_from_8, every=5, log_every=50)
    assert latest_checkpoint_step(tmp_path / "a") == 5

    def nan_params_at_3(state, batch, step):  # finite loss, poisoned parameters
        state, _ = step_fn(state, batch, step)
        return {**state, "w": jnp.where(step >= 2, jnp.nan, state["w"])}, {"loss": jnp.ones(())}

    with pytest.raises(NonFiniteLossError, match="parameters are not finite after step 4"):
        run(tmp_path / "b", 10, nan_params_at_3, every=4)
    assert latest_checkpoint_step(tmp_path / "b") is None


def test_an_unreadable_checkpoint_falls_back_to_the_one_before(tmp_path, capsys):
    full = run(tmp_path / "a", 12)
    run(tmp_path / "b", 8, every=4)  # checkpoints 4 and 8
    for f in (tmp_path / "b" / "8" / "state").rglob("*"):
        if f.is_file():
            f.write_bytes(b"\0" * 7)  # truncated array data
    resumed = run(tmp_path / "b", 12)
    err = capsys.readouterr().err
    assert "is unreadable" in err and "resuming from step 4" in err
    np.testing.assert_array_equal(resumed["w"], full["w"])
    assert latest_checkpoint_step(tmp_path / "b") == 12


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    run(tmp_path, 4)
    other = {"w": jnp.ones(5), "n": jnp.int32(0)}
    with pytest.raises(CheckpointError, match=r"another model \(array 1 is float32\[3\]"):
        run(tmp_path, 8, state=other)
    assert latest_checkpoint_step(tmp_path) == 4  # refused, not deleted


def test_sigterm_before_the_loop_stops_it_before_any_step(tmp_path, monkeypatch):
    monkeypatch.setitem(preemption._flag, "requested", True)
    monkeypatch.setitem(preemption._flag, "installed", True)  # as launch/run.py would have
    with pytest.raises(Preempted, match="before step 1; nothing saved"):
        run(tmp_path, 10)
    assert latest_checkpoint_step(tmp_path) is None


def test_progress_lines_without_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PROGRESS_EVERY_S", "0")
    run(tmp_path, 4)
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("train: step")]
    assert lines[-1].startswith("train: step 4/4 (100%) loss ") and "ETA 0m00s" in lines[-1]


class _CountingCheckpointer(Checkpointer):
    opened: list["_CountingCheckpointer"] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.closed = False
        self.opened.append(self)

    def close(self) -> None:
        self.closed = True
        super().close()


def test_the_loop_opens_and_always_closes_its_checkpointer(tmp_path, monkeypatch):
    monkeypatch.setattr(loop_module, "Checkpointer", _CountingCheckpointer)
    _CountingCheckpointer.opened.clear()
    assert latest_checkpoint_step(tmp_path / "ck") is None
    assert not (tmp_path / "ck").exists()  # asking creates nothing
    run(tmp_path / "ck", 4)  # finishes: saves step 4
    run(tmp_path / "ck", 4)  # nothing left to do: restores and returns at once

    def nan_at_1(state, batch, step):
        state, m = step_fn(state, batch, step)
        return state, {"loss": jnp.where(step >= 1, jnp.nan, m["loss"])}

    with pytest.raises(NonFiniteLossError):
        run(tmp_path / "nan", 6, nan_at_1)

    def term_at_0(state, batch, step):
        os.kill(os.getpid(), signal.SIGTERM)
        return step_fn(state, batch, step)

    with pytest.raises(Preempted):
        run(tmp_path / "term", 50, term_at_0)
    assert len(_CountingCheckpointer.opened) == 4
    assert all(c.closed for c in _CountingCheckpointer.opened)
    assert latest_checkpoint_step(tmp_path / "ck") == 4
    assert latest_checkpoint_step(tmp_path / "nan") is None  # stopped before any save
    assert latest_checkpoint_step(tmp_path / "term") == 1


def test_resume_from_checkpoint_dir_equals_an_unbroken_run(tmp_path):
    full = run(tmp_path / "a", 10)
    run(tmp_path / "b", 6, every=3)  # a shorter first run, then the same directory to 10
    resumed = run(tmp_path / "b", 10)
    np.testing.assert_array_equal(resumed["w"], full["w"])
    assert int(resumed["n"]) == 10
    assert latest_checkpoint_step(tmp_path / "b") == 10
    # Without a directory nothing is saved or resumed: all 10 steps again from init().
    batches = batch_iterator(DATA, 8, seed=1)
    fresh = train_loop(state=init(), step_fn=step_fn, batches=batches, num_steps=10)
    assert int(fresh["n"]) == 10


def test_batch_iterator_state_gives_exact_resume():
    it = batch_iterator(DATA, 8, seed=3)
    for _ in range(7):  # past one epoch of 5 batches
        next(it)
    state = it.get_state()
    expected = [next(it)["x"] for _ in range(4)]
    it2 = batch_iterator(DATA, 8, seed=3)
    it2.set_state(state)
    for e in expected:
        np.testing.assert_array_equal(next(it2)["x"], e)
    with pytest.raises(ValueError, match="exceeds"):
        batch_iterator(DATA, 100, seed=0)


def test_a_safe_point_outside_a_loop_stops_only_after_sigterm(monkeypatch):
    preemption.check("problem chain")  # no SIGTERM: nothing happens
    monkeypatch.setitem(preemption._flag, "requested", True)
    with pytest.raises(Preempted, match="SIGTERM before problem chain; nothing saved"):
        preemption.check("problem chain")
