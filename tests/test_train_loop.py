import os
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shared.data.pipeline import batch_iterator
from shared.train import NonFiniteLossError, Preempted, latest_checkpoint_step, train_loop
from shared.train import loop as loop_module
from shared.train.checkpoint import Checkpointer

DATA = {"x": np.random.default_rng(0).standard_normal((40, 3)).astype(np.float32)}


@jax.jit
def _step(state, batch):
    w = state["w"] - 0.1 * jnp.mean(batch["x"], 0) * state["w"]
    return {"w": w, "n": state["n"] + 1}, {"loss": jnp.sum(w**2)}


def step_fn(state, batch, step):
    return _step(state, batch)


def init():
    return {"w": jnp.ones(3), "n": jnp.int32(0)}


def run(tmp, steps, fn=step_fn, every=0):
    return train_loop(
        state=init(),
        step_fn=fn,
        batches=batch_iterator(DATA, 8, seed=1),
        num_steps=steps,
        checkpoint_dir=tmp,
        checkpoint_every=every,
        metrics_path=tmp / "metrics.jsonl",
        log_every=2,
    )


def test_interrupted_run_resumes_to_the_same_state(tmp_path):
    full = run(tmp_path / "a", 12)

    def crash_at_9(state, batch, step):
        if step == 9:
            raise KeyboardInterrupt  # stands in for a kill after the step-8 checkpoint
        return step_fn(state, batch, step)

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path / "b", 12, crash_at_9, every=4)
    assert latest_checkpoint_step(tmp_path / "b") == 8
    resumed = run(tmp_path / "b", 12)
    np.testing.assert_array_equal(resumed["w"], full["w"])
    assert int(resumed["n"]) == 12  # 8 restored + 4 new steps, not 12 new ones
    assert (tmp_path / "a" / "metrics.jsonl").read_text().count("\n") == 6


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

    with pytest.raises(NonFiniteLossError, match="at step 5"):
        run(tmp_path, 20, nan_at_5)


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
