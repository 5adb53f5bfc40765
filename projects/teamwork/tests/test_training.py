"""The detector's training checkpoints under the run's workdir and resumes like every other
project's: a rerun of a finished run trains no more, an interrupted one ends where an unbroken
one does."""

import dataclasses
import json

import jax
import numpy as np
import pytest
from flax import nnx

from projects.teamwork import detect, experiment
from shared.train import latest_checkpoint_step

SMOKE = experiment.CONFIGS["smoke"]


def _train_records(workdir):
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if "step" in r]


def test_a_second_run_with_the_same_workdir_trains_no_more(tmp_path):
    first = experiment.run(SMOKE, tmp_path)
    assert latest_checkpoint_step(tmp_path / "checkpoints" / "teamwork") == SMOKE.train.steps
    logged = _train_records(tmp_path)
    assert [r["phase"] for r in logged] == ["teamwork"]
    second = experiment.run(SMOKE, tmp_path)
    assert _train_records(tmp_path) == logged  # restored from the final checkpoint: no step ran
    assert second == first


class _CrashAt4(detect.WindowBatches):
    def __next__(self):
        if self.step == 4:
            raise KeyboardInterrupt  # stands in for a kill after the step-3 checkpoint
        return super().__next__()


def test_an_interrupted_training_resumes_to_the_unbroken_result(tmp_path, monkeypatch):
    train = np.random.default_rng(0).standard_normal((400, 4)).astype(np.float32)
    tcfg = dataclasses.replace(SMOKE.train, steps=6, checkpoint_every=3)
    args = (train, np.array([True, False, False, False]), (4, 8), SMOKE.window, "role", True)

    def fit(name, **kw):
        model = detect.train_detector(*args, SMOKE.model, tcfg, 0, None, name, **kw)
        return jax.tree.leaves(nnx.state(model))

    unbroken = fit("a")
    with monkeypatch.context() as m:
        m.setattr(detect, "WindowBatches", _CrashAt4)
        with pytest.raises(KeyboardInterrupt):
            fit("b", checkpoint_dir=tmp_path / "b")
    assert latest_checkpoint_step(tmp_path / "b") == 3
    resumed = fit("b", checkpoint_dir=tmp_path / "b")
    assert latest_checkpoint_step(tmp_path / "b") == 6
    for x, y in zip(unbroken, resumed):
        np.testing.assert_array_equal(x, y)
