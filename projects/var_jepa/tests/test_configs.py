import dataclasses

import pytest

from projects.var_jepa import experiment, tables
from shared.config import ConfigError, apply_overrides


def test_every_config_is_valid_and_has_the_three_levels():
    assert {"smoke", "cpu", "paper"} <= set(experiment.CONFIGS)
    for cfg in experiment.CONFIGS.values():
        cfg.validate()
    paper = experiment.CONFIGS["paper"]
    assert paper.model.num_layers == 16 and paper.pretrain.batch_size == 512
    assert paper.pretrain.lr == pytest.approx(3.66e-4)


@pytest.mark.parametrize("table", list(tables.TABLES.values()), ids=list(tables.TABLES))
def test_every_table_run_builds_a_valid_config(table):
    runs = table.runs()
    assert len({seed for _, seed in runs}) >= 3
    for overrides, seed in runs:
        cfg = apply_overrides(experiment.CONFIGS[table.config], [*overrides, f"seed={seed}"])
        assert cfg.seed == seed
    labels = {r.label for r in table.rows}
    for sec in table.sections:
        for (row, col), _ in sec.paper:
            assert row in labels and col in {c.label for c in sec.columns}
    for a, b in table.compare:
        assert a in labels and b in labels


def test_invalid_combinations_are_rejected():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError, match="methods"):
        apply_overrides(cfg, ["methods=('tjepa', 'bogus')"])
    with pytest.raises(ConfigError, match="divisible"):
        apply_overrides(cfg, ["model.num_heads=3"])
    with pytest.raises(ValueError):
        dataclasses.replace(cfg, methods=())
