"""Every config builds; the smoke config runs through `launch/run.py` and the table writer."""

import json
import pathlib

import pytest

from projects.td_exp_step import experiment, tables, tuning
from shared.config import ConfigError, apply_overrides

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(experiment.CONFIGS))
def test_every_config_builds_and_every_row_has_candidates(name):
    cfg = experiment.CONFIGS[name]
    for regime in ("iid", "markov"):
        schedules = experiment.build_schedules(cfg.grid, cfg.garnet.gamma, regime)
        assert len(set(schedules)) == len(schedules)
        for row in tuning.row_specs(cfg.grid.default_eta0, cfg.grid.default_beta):
            cand = [s for s in schedules if row.member(s, cfg.garnet.gamma)]
            assert bool(cand) != (row.markov_only and regime == "iid"), row.key
            for s in cand:
                s.coefficients(min(cfg.horizons), omega=0.05)


def test_bad_configs_are_rejected():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError, match="horizon"):
        apply_overrides(cfg, ["horizons=(5,)"])
    with pytest.raises(ConfigError):
        apply_overrides(cfg, ["regimes=('bogus',)"])


def test_smoke_run_through_the_entry_point_and_table(smoke_run):
    proc, tmp_path = smoke_run("td_exp_step")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    metrics = json.loads((tmp_path / "results.json").read_text())
    assert metrics["garnet/markov/T300/reg_exp/param"] > 0
    assert "garnet/iid/T300/reg_exp/param" not in metrics  # regularized: Markovian only
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(len(e["values"]) == 3 for e in summary)  # the evaluation seeds only
    problems = json.loads((tmp_path / "problems.json").read_text())
    body, data = tables.build(summary, problems)
    assert "ICU-Sepsis" in body and "Markovian" in body and len(data["cells"]) > 0
    table = tables.TABLES["main"]
    text, data = table.render(table, {table.runs()[0]: tmp_path})
    assert body in text and data["config"]["num_eval_seeds"] == 3
