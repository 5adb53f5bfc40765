"""The LR sweep: best grid point, extensions past an edge, bracketing, cached across seeds."""

import dataclasses
import math

from projects.scale import experiment


def test_sweep_extends_past_an_edge_and_caches(tmp_path, monkeypatch):
    calls = []

    def fake_train(cfg, data, name, lr, steps, seed, workdir=None):
        calls.append((name, lr, steps, seed, cfg.adam_lr))
        return {}, math.log(lr / 0.9) ** 2, 1.0  # best at 0.9: above the grid's top value 0.3

    monkeypatch.setattr(experiment, "_train", fake_train)
    cfg = dataclasses.replace(
        experiment.CONFIGS["smoke"], lr=0.0, sweep_lrs=(0.03, 0.1, 0.3), seed=2
    )
    lr, sweep, bracketed = experiment.choose_lr(cfg, None, cfg.optimizer, tmp_path)
    assert abs(lr - 0.9) < 1e-9  # 0.3 * (0.3 / 0.1): the one extension
    assert list(sweep) == ["0.03", "0.1", "0.3", "0.9"]
    assert not bracketed  # the best is still the top point: nothing above it was tried
    assert all(c[2] == cfg.sweep_steps and c[3] == cfg.sweep_seed for c in calls)
    n = len(calls)
    again, _, _ = experiment.choose_lr(
        dataclasses.replace(cfg, seed=1), None, cfg.optimizer, tmp_path
    )
    assert again == lr and len(calls) == n  # other seeds reuse the cached sweep
    wider = dataclasses.replace(cfg, sweep_extensions=2)  # a second step past the edge: 2.7
    lr2, sweep2, bracketed2 = experiment.choose_lr(wider, None, cfg.optimizer, tmp_path / "w")
    assert abs(lr2 - 0.9) < 1e-9 and list(sweep2)[-1] == "2.7" and bracketed2
    calls.clear()
    n = 0
    # borrowing: another optimizer's own sweep at its defaults, whatever this row's adam_lr is
    row = dataclasses.replace(cfg, optimizer="scale_l2", lr_from="scale", adam_lr=1e-3)
    experiment.choose_lr(row, None, "scale", tmp_path / "b")
    assert {c[0] for c in calls[n:]} == {"scale"}
    assert {c[4] for c in calls[n:]} == {experiment.Config.adam_lr}
    m = len(calls)  # the same optimizer borrowing its own sweep with another adam_lr: cached
    own = dataclasses.replace(cfg, optimizer="scale", lr_from="scale", adam_lr=1e-3)
    base = dataclasses.replace(cfg, optimizer="scale", sweep_lrs=())
    assert experiment.choose_lr(own, None, "scale", tmp_path / "b") == experiment.choose_lr(
        base, None, "scale", tmp_path / "b"
    )
    assert len(calls) == m


def test_grid_scale_moves_the_default_grid_not_an_explicit_one():
    cfg = dataclasses.replace(experiment.CONFIGS["cpu"], optimizer="adamw", grid_scale=0.1)
    assert cfg.grid() == tuple(0.1 * x for x in experiment.DEFAULT_GRIDS["adamw"])
    assert dataclasses.replace(cfg, sweep_lrs=(0.5,)).grid() == (0.5,)
    long = experiment.CONFIGS["long"]
    assert min(long.grid()) < min(experiment.CONFIGS["cpu"].grid())
