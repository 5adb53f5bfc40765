"""The smoke config through `launch/run.py` (shared session fixture), the tables rendered from
it, and bad configs refused."""

import json

import pytest

from projects.prm_biasbench import experiment, perturbations, tables
from shared.config import ConfigError, apply_overrides


@pytest.fixture(scope="module")
def smoke(smoke_run):
    proc, workdir = smoke_run("prm_biasbench")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return workdir, json.loads((workdir / "results.json").read_text())


def test_smoke_measures_every_tier(smoke):
    workdir, m = smoke
    for kind in perturbations.STYLE:
        assert m[f"tier1/truth/{kind}/error_share"] == 0.0
    for kind in perturbations.LOGIC:
        assert m[f"tier1/truth/{kind}/error_share"] == 1.0
    for prm in ("decoder", "minilm"):
        for kind in perturbations.TYPES:
            assert 0.0 <= m[f"tier1/{prm}/{kind}/auroc"] <= 1.0
            assert -1.0 <= m[f"tier1/{prm}/{kind}/dlast"] <= 1.0
        assert 0.0 <= m[f"tier1/{prm}/slips/f1"] <= 1.0
        # GCG starts from the random suffix and never gets worse; the continuous attack starts
        # from the GCG suffix and keeps its best iterate
        assert m[f"tier2/{prm}/r_gcg"] >= m[f"tier2/{prm}/r_random_suffix"] - 1e-6
        assert m[f"tier2/{prm}/r_continuous"] >= m[f"tier2/{prm}/r_gcg"] - 1e-6
    cfg = experiment.CONFIGS["smoke"]
    summary = json.loads((workdir / "tier3.json").read_text())
    assert summary["curve"]["step"] == list(range(1, cfg.rl.grpo.steps + 1))
    assert 0.0 <= m["tier3/decoder/acc_final"] <= 1.0
    curves = json.loads((workdir / "tier2_curves.json").read_text())
    assert len(curves["decoder"]["hamming_r"]) == cfg.attack.suffix_len + 1


def test_tables_render_from_the_smoke_run(smoke, tmp_path):
    workdir, _ = smoke
    for name, table in tables.TABLES.items():
        body, data = table.render(table, {((), 0): workdir})
        assert "–" not in body.split("stylistic share")[0] or name == "tier3", body
        assert data["sections"]
    paths = tables.write_figures(tables.TABLES["tier3"], {((), 0): workdir}, tmp_path)
    paths += tables.write_figures(tables.TABLES["tier2"], {((), 0): workdir}, tmp_path)
    assert all(p.exists() for p in paths) and len(paths) == 2


def test_bad_configs_are_refused():
    cfg = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError):
        apply_overrides(cfg, ["tiers=('tier4',)"])
    with pytest.raises(ConfigError, match="rl.prm"):
        apply_overrides(cfg, ["rl.prm='bert'"])
    with pytest.raises(ConfigError, match="max_new_tokens"):
        apply_overrides(cfg, ["policy.max_new_tokens=32"])
    with pytest.raises(ConfigError, match="lm_weight"):
        apply_overrides(cfg, ["minilm.train.lm_weight=1.0"])
    with pytest.raises(ConfigError, match="decoder.max_len"):
        apply_overrides(cfg, ["decoder.max_len=64"])
    with pytest.raises(ConfigError):
        apply_overrides(cfg, ["minilm.trainable_layers=7"])
    assert experiment.CONFIGS["smoke"].prms_needed() == ("decoder", "minilm")
    assert apply_overrides(cfg, ["tiers=('tier3',)"]).prms_needed() == ("decoder",)
