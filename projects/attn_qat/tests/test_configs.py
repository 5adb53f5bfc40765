"""Every config and table row builds; bad configs fail naming the field; the paper config builds
abstractly (70B shapes, sharding rules that divide its mesh, a traced training step)."""

import re

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

from projects.attn_qat import experiment, tables
from shared.config import ConfigError, apply_overrides
from shared.models.llama import count_params, next_token_loss
from shared.models.llama_sharding import llama_rules
from shared.tables import overrides_for


def test_every_config_is_valid_and_has_the_three_levels():
    assert {"smoke", "cpu", "ablation", "paper"} <= set(experiment.CONFIGS)
    for cfg in experiment.CONFIGS.values():
        cfg.validate()
    paper = experiment.CONFIGS["paper"]
    assert paper.model.attention_impl == "pallas" and paper.mesh_shape == (16, 8)


@pytest.mark.parametrize("table", list(tables.TABLES.values()), ids=list(tables.TABLES))
def test_every_table_run_builds_a_valid_config(table):
    runs = table.runs()
    assert len({seed for _, seed in runs}) >= 2
    for seed in table.seeds:
        for row in table.rows:
            overrides = overrides_for(row, table.sections[0].columns[0])
            cfg = apply_overrides(experiment.CONFIGS[table.config], [*overrides, f"seed={seed}"])
            if cfg.measure == "grad_fidelity":  # one run measures every mode (row)
                assert row.prefix in cfg.fidelity.modes, row
                continue
            # The row's run produces the row's metrics (the start is evaluated when asked).
            expected = {"pretrained": cfg.eval_start, "pretrain": cfg.pretrain.steps > 0}
            assert expected.get(row.prefix, row.prefix in cfg.variants), row
    labels = {r.label for r in table.rows}
    for a, b in table.compare:
        assert a in labels and b in labels
    assert table.name in tables.FIGURES


def test_invalid_configs_are_rejected_naming_the_field():
    cfg = experiment.CONFIGS["ablation"]
    with pytest.raises(ConfigError, match="variants"):
        apply_overrides(cfg, ["variants=('attn_qat', 'fp8')"])
    with pytest.raises(ConfigError, match="head_dim"):
        apply_overrides(cfg, ["model.num_heads=32"])  # head_dim 256 / 32 = 8
    with pytest.raises(ConfigError, match="tokenizer"):
        apply_overrides(cfg, ["data.tokenizer='smollm2'"])
    with pytest.raises(ConfigError, match="warmup_steps"):
        apply_overrides(cfg, ["finetune.warmup_steps=10000"])
    with pytest.raises(ValueError, match="init_checkpoint"):
        experiment.restore_paper_model(experiment.CONFIGS["paper"], None)


def test_paper_model_builds_abstractly_and_its_sharding_divides_the_mesh():
    cfg = experiment.CONFIGS["paper"]
    one, two = (experiment.paper_abstract_model(cfg, n) for n in (1, 2))
    assert two.cfg.attention == "attn_qat" and two.cfg.attention_impl == "pallas"
    per_block = count_params(two) - count_params(one)
    total = count_params(one) + 79 * per_block  # 80 identical blocks
    assert 70.5e9 < total < 70.6e9  # Llama-3.1-70B: 70.55 B parameters
    sizes = dict(zip(("data", "model"), cfg.mesh_shape))
    rules = llama_rules(cfg.sharding)
    for path, var in nnx.to_flat_state(nnx.state(two, nnx.Param)):
        name = "/".join(map(str, path))
        spec = next((s for r, s in rules if re.fullmatch(r, name)), ())
        for dim, axis in zip(var.shape, spec):
            assert axis is None or dim % sizes[axis] == 0, (name, var.shape, spec)


def test_paper_training_step_traces_with_the_pallas_kernel():
    # Two blocks of the paper model, one sequence of the paper's length, traced (not run).
    cfg = experiment.CONFIGS["paper"]
    graphdef, state = nnx.split(experiment.paper_abstract_model(cfg, 2))
    windows = jax.ShapeDtypeStruct((1, cfg.data.seq_len + 1), jnp.int32)

    def loss(state, w):
        return next_token_loss(nnx.merge(graphdef, state)(w[:, :-1]), w[:, 1:])

    value, grads = jax.eval_shape(jax.value_and_grad(loss), state, windows)
    assert value.shape == () and jax.tree.structure(grads) == jax.tree.structure(state)
