"""Every config and table row builds; the paper config builds at full size (shapes only)."""

import re

import jax
import pytest
from flax import nnx
from jax.sharding import PartitionSpec as P

from projects.scale import experiment, tables
from shared.config import ConfigError, apply_overrides
from shared.models.llama_sharding import llama_rules
from shared.optim.labels import path_name


def test_three_levels_and_the_paper_settings():
    assert {"smoke", "cpu", "paper"} <= set(experiment.CONFIGS)
    paper = experiment.CONFIGS["paper"]
    assert (paper.seq_len, paper.batch_size, paper.steps, paper.lr) == (256, 512, 20_000, 1e-3)
    assert paper.tokenizer == "t5" and paper.data == "c4" and paper.param_dtype == "bfloat16"
    assert paper.adam_lr == 0.02 and paper.sharding == "data"


@pytest.mark.parametrize("table", list(tables.TABLES.values()), ids=list(tables.TABLES))
def test_every_table_run_builds_a_valid_config(table):
    runs = table.runs()
    if table.name != "memory_paper":
        least = {"main": 3, "main_long": 1}.get(table.name, 2)  # long: one seed fills 90 min
        assert len({seed for _, seed in runs}) >= least
    for overrides, seed in runs:
        cfg = apply_overrides(experiment.CONFIGS[table.config], [*overrides, f"seed={seed}"])
        assert cfg.seed == seed and (cfg.lr > 0 or cfg.grid() or cfg.lr_from)
    labels = {r.label for r in table.rows}
    for sec in table.sections:
        for (row, col), _ in sec.paper:
            assert row in labels and col in {c.label for c in sec.columns}


def test_bad_configs_name_the_field():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError, match="optimizer"):
        apply_overrides(cfg, ["optimizer='adam'"])
    with pytest.raises(ValueError, match="lr_from"):
        apply_overrides(cfg, ["lr_from='nope'"])
    with pytest.raises(ValueError, match="tokenizer"):
        apply_overrides(cfg, ["data='c4'"])


def test_paper_config_builds_by_eval_shape_and_shards():
    cfg = experiment.CONFIGS["paper"]
    mem = experiment.abstract_memory(cfg, 32_000)
    assert mem.param_bytes == 2 * 134_105_856  # bf16, the official 130M parameter set
    # SCALE's state: lm_head momentum + Adam m, v of the 25 norm vectors (bf16)
    oned = (2 * 12 + 1) * 768
    assert mem.state_bytes - mem.counter_bytes == 2 * (768 * 32_000 + 2 * oned)
    adam = experiment.abstract_memory(cfg, 32_000, "adamw")
    assert adam.state_bytes - adam.counter_bytes == 2 * mem.param_bytes
    # every matrix gets a PartitionSpec from the FSDP rules; the data-parallel config replicates
    abstract = nnx.eval_shape(
        lambda: experiment.Llama(experiment.model_config(cfg, 32_000), rngs=nnx.Rngs(0))
    )
    rules = llama_rules("fsdp")
    names = [
        path_name(p)
        for p, x in jax.tree_util.tree_leaves_with_path(nnx.state(abstract))
        if x.ndim == 2
    ]
    specs = [next((s for pat, s in rules if re.fullmatch(pat, n)), P()) for n in names]
    assert all(s != P() for s in specs) and llama_rules("data") == []
    # the official README's model+optimizer memory at 130M: SCALE 0.32G, Adam 0.81G
    assert round(mem.total_bytes / 1e9, 2) == 0.32
    assert abs(adam.total_bytes / 1e9 - 0.81) < 0.01
