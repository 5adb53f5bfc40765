import json
import pathlib

import numpy as np
import pytest

from projects.teamwork import experiment, tables
from shared.config import ConfigError, apply_overrides

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_every_config_is_valid():
    assert {"smoke", "cpu", "paper"} <= set(experiment.CONFIGS)
    for cfg in experiment.CONFIGS.values():
        cfg.validate()


@pytest.mark.parametrize("table", list(tables.TABLES.values()), ids=list(tables.TABLES))
def test_every_table_run_builds_a_valid_config(table):
    runs = table.runs()
    assert len({seed for _, seed in runs}) >= 3
    for overrides, seed in runs:
        cfg = apply_overrides(experiment.CONFIGS[table.config], [*overrides, f"seed={seed}"])
        assert cfg.seed == seed
    for row in table.rows:  # every row's method is trained by the run that fills it
        if row.prefix == "data":  # run-level metrics (roles, lag order), present in every run
            continue
        cfg = apply_overrides(
            experiment.CONFIGS[table.config], [f"{k}={v!r}" for k, v in row.overrides]
        )
        assert row.prefix in cfg.methods, row.label
    labels = {r.label for r in table.rows}
    for a, b in table.compare:
        assert a in labels and b in labels


def test_invalid_configs_are_rejected():
    with pytest.raises(ConfigError, match="methods"):
        apply_overrides(experiment.CONFIGS["cpu"], ["methods=('teamwork', 'bogus')"])
    with pytest.raises(ConfigError, match="benchmark"):
        apply_overrides(experiment.CONFIGS["cpu"], ["benchmark='swat'"])  # SMD is read now


def test_smoke_run_through_the_entry_point(smoke_run):
    proc, tmp_path = smoke_run("teamwork")
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((tmp_path / "results.json").read_text())
    for m in ("teamwork", "pca"):
        for k in ("f1", "pa_f1", "aff_f1", "vus_pr", "vus_roc"):
            assert 0.0 <= res[f"{m}/{k}"] <= 1.0
    assert (tmp_path / "scores.npz").exists()
    assert res["data/role_lags"] >= 1  # chosen by BIC on the train split
    assert "teamwork/vus_pr_dependency_break" in res and "pca/vus_pr_on_auxiliary" in res


def test_breakdown_ignores_scores_of_other_kinds():
    """A kind's VUS-PR sees only its own anomalous steps and the normal ones."""
    series = experiment.load(experiment.CONFIGS["smoke"])
    rng = np.random.default_rng(0)
    scores = rng.random(len(series.test_labels))
    shapelet = series.test_types == series.type_names.index("collective_shapelet")
    other = (series.test_labels == 1) & ~shapelet
    changed = np.where(other, scores + 10.0, scores)
    a = experiment.breakdown(series, scores, 10)
    b = experiment.breakdown(series, changed, 10)
    assert a["vus_pr_collective_shapelet"] == b["vus_pr_collective_shapelet"]
    assert a["vus_pr_collective_trend"] != b["vus_pr_collective_trend"]
