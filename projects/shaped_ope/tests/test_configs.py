import dataclasses

import pytest

from projects.shaped_ope import experiment, tables
from shared.config import ConfigError, apply_overrides


def test_every_config_builds_and_has_the_three_levels():
    assert {"smoke", "cpu", "paper"} <= set(experiment.CONFIGS)
    cpu = experiment.CONFIGS["cpu"]
    assert cpu.reps >= 500 and {50, 200, 1000} <= set(cpu.ns)
    assert {"chain_sparse", "icu_sepsis", "cancer"} <= set(cpu.problems)
    assert experiment.CONFIGS["paper"].reps == 1000


def test_every_table_run_builds_a_valid_config():
    for table in tables.TABLES.values():
        for overrides, seed in table.runs():
            cfg = apply_overrides(experiment.CONFIGS[table.config], [*overrides, f"seed={seed}"])
            assert cfg.seed == seed
        for sec in table.sections:
            assert len(sec.columns) == len(experiment.CONFIGS[table.config].ns)


def test_invalid_configs_are_rejected():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ValueError, match="even"):
        dataclasses.replace(cfg, ns=(51,))
    with pytest.raises(ValueError, match="unknown"):
        dataclasses.replace(cfg, problems=("chain_sparse", "atari"))
    with pytest.raises(ConfigError):
        apply_overrides(cfg, ["reps=1.5"])
