import os
import signal

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shared.data.pipeline import batch_iterator
from shared.train import Checkpointer, NonFiniteLossError, Preempted, train_loop

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
        checkpointer=Checkpointer(tmp),
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
    assert Checkpointer(tmp_path / "b").latest_step() == 8
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
    assert Checkpointer(tmp_path).latest_step() == 4
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handler restored


def test_nan_loss_stops_naming_the_step(tmp_path):
    def nan_at_5(state, batch, step):
        state, m = step_fn(state, batch, step)
        return state, {"loss": jnp.where(step >= 5, jnp.nan, m["loss"])}

    with pytest.raises(NonFiniteLossError, match="at step 5"):
        run(tmp_path, 20, nan_at_5)


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
