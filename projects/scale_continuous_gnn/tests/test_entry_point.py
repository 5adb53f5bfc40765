"""Every config and table row builds; bad configs fail naming the field; the smoke config runs
through `launch/run.py`, and its run directory feeds the table's figure."""

import json
import pathlib

import pytest

from projects.scale_continuous_gnn import experiment, figures, tables
from shared.config import ConfigError, apply_overrides

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(experiment.CONFIGS))
def test_every_config_builds(name):
    cfg = experiment.CONFIGS[name]
    assert cfg.gap_trained_on in cfg.train_on and cfg.models


def test_every_table_row_is_a_trained_model_of_its_config():
    table = tables.TABLES["main"]
    cfg = experiment.CONFIGS[table.config]
    for row in table.rows:
        family, model = row.prefix.split("/")
        assert family in cfg.families and (model in cfg.models or model == "train_mean")
    assert len(table.seeds) >= 3


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("models=('nope',)", "models"),
        ("train_on=('fine',)", "gap_trained_on"),
        ("molecules.z=1.0", "z"),
        ("grids.grid_sides=(5,)", "grid_sides"),
        ("train.epochs=0", "epochs"),
        ("large_grid=7", "large_grid"),
    ],
)
def test_bad_configs_name_the_field(override, field):
    with pytest.raises(ConfigError, match=field):
        apply_overrides(experiment.CONFIGS["cpu"], [override])


def test_smoke_run_through_the_entry_point(smoke_run):
    proc, tmp_path = smoke_run("scale_continuous_gnn")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    m = json.loads((tmp_path / "results.json").read_text())
    for res in ("fine", "coarse", "mixed"):
        for test in ("fine", "coarse"):
            assert m[f"grids/resolvent/{res}_to_{test}"] >= 0
    # at initialization the resolvent model's gap falls with lambda, GCN's does not vanish
    assert m["grids/resolvent/gap_untrained@10000"] < m["grids/resolvent/gap_untrained@1"]
    assert m["grids/gcn/gap_untrained@10000"] > 0.05
    assert "grids/resolvent/gap_large_trained@100" in m
    png = figures.gap_figure(figures.load([tmp_path]), tmp_path / "gap.png")
    assert png.stat().st_size > 10_000
