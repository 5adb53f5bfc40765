"""Every config and table row builds, bad configs fail naming the field, and the smoke config
runs through `launch/run.py`; its run directory feeds the figure code."""

import json
import pathlib

import pytest

from projects.neg_sampling import experiment, tables
from shared.config import ConfigError, apply_overrides
from shared.tables import overrides_for

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(experiment.CONFIGS))
def test_every_config_builds_with_its_jobs(name):
    cfg = experiment.CONFIGS[name]
    jobs = experiment._jobs(cfg)
    n_r2 = len(cfg.r2_pi_grid) if "r2" in cfg.samplers else 0
    assert len(jobs) == len(cfg.samplers) - (n_r2 > 0) + n_r2


def test_every_table_row_builds_and_names_a_trained_sampler():
    for table in tables.TABLES.values():
        base = experiment.CONFIGS[table.config]
        for row in table.rows:
            for sec in table.sections:
                for col in sec.columns:
                    cfg = apply_overrides(base, [*overrides_for(row, col), "seed=0"])
                    assert row.prefix in cfg.samplers


def test_bad_configs_are_rejected_naming_the_field():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError, match="keep"):
        apply_overrides(cfg, ["keep=0.0"])
    with pytest.raises(ConfigError, match="setting"):
        apply_overrides(cfg, ["setting='mnar'"])
    with pytest.raises(ConfigError, match="r2_pi_grid"):
        apply_overrides(cfg, ["r2_pi_grid=(1.5,)"])


def test_smoke_run_through_the_entry_point_and_figures(smoke_run, tmp_path):
    proc, workdir = smoke_run("neg_sampling")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = json.loads((workdir / "results.json").read_text())
    assert m["oracle/fnr"] == 0.0  # the oracle never samples a true positive
    assert m["r2/pi_plus"] == 0.1 and m["r2/recall"] == m["r2_pi0.1/recall"]
    for prefix in ("r2", "oracle"):
        assert 0.0 <= m[f"{prefix}/recall"] <= 1.0 and 0.0 <= m[f"{prefix}/ndcg_hidden"] <= 1.0
    curves = json.loads((workdir / "curves.json").read_text())
    assert len(curves["oracle"]["fnr"]) == experiment.CONFIGS["smoke"].train.epochs
    paths = tables.figures(tables.TABLES["main"], {("x", 0): workdir}, tmp_path / "fig")
    assert all(p.exists() for p in paths)
