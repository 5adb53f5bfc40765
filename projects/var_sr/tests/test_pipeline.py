"""The smoke run through launch/run.py (shared with tests/test_projects.py), its records, the
tables and figure rendered from them, the paper config and its local folder."""

import json

import pytest

from projects.var_sr import experiment, tables
from projects.var_sr.data import folder_images
from shared.data.resolver import MissingDataError


def test_smoke_run_records_every_system_and_the_tables_render(smoke_run, tmp_path):
    proc, workdir = smoke_run("var_sr")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cfg = experiment.CONFIGS["smoke"]
    metrics = json.loads((workdir / "results.json").read_text())
    assert metrics["hit/x4_psnr"] > 0
    recs = [json.loads(x) for x in (workdir / "systems.jsonl").read_text().splitlines()]
    dpo = {f"hit_dpo_b{b}_l{lam}" for b in cfg.dpo.betas for lam in cfg.dpo.lams}
    assert {r["system"] for r in recs} == {"bicubic", "var_sr", "hit"} | dpo
    for r in recs:
        for scale in ("x2", "x4"):
            assert r[scale]["psnr"] > 0 and -1 <= r[scale]["ssim"] <= 1
    toks = [json.loads(x) for x in (workdir / "tokenizers.jsonl").read_text().splitlines()]
    assert {t["tokenizer"] for t in toks} == {"standard", "hit"}
    assert all(0 <= t["overlap"] <= 1 and len(t["prefix_psnr"]) == 4 for t in toks)
    margins = [json.loads(x) for x in (workdir / "margins.jsonl").read_text().splitlines()]
    assert {m["system"] for m in margins} == {"var_sr", "hit"} | dpo
    md, _ = tables.render_table1(tables.TABLES["table1"], {((), 0): workdir})
    assert "+ HIT + DPO (β = 0.1, λ = 1.0)" in md and "bicubic" in md
    md, _ = tables.render_table2(tables.TABLES["table2"], {((), 0): workdir})
    assert "standard RQ (VAR)" in md and "token overlap" in md
    assert all(p.exists() for p in tables.figure(tables.TABLES["table1"], {((), 0): workdir},
                                                   tmp_path))  # fmt: skip


def test_paper_config_reads_a_local_folder_with_vars_scales(tmp_path):
    cfg = experiment.CONFIGS["paper"]
    assert cfg.data.image_dir and cfg.data.patch_nums[-1] * 4 == cfg.data.hr_size
    assert cfg.transformer.depth == 16 and cfg.transformer.dim == 1024
    with pytest.raises(MissingDataError, match="no .png/.jpg images"):
        folder_images(tmp_path)
    with pytest.raises(ValueError, match="needs the latent side"):
        experiment.Config(data=experiment.DataConfig(patch_nums=(1, 4, 8)))
