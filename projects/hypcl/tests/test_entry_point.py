"""The smoke run through launch/run.py, its records, the tables and figure rendered from it, the
paper config and its features folder."""

import json

import numpy as np
import pytest

from projects.hypcl import experiment, tables
from projects.hypcl.features import load_features
from projects.hypcl.toy_clip import prompts


def test_smoke_run_records_every_method_and_the_tables_render(smoke_run, tmp_path):
    proc, workdir = smoke_run("hypcl")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cfg = experiment.CONFIGS["smoke"]
    recs = [json.loads(x) for x in (workdir / "methods.jsonl").read_text().splitlines()]
    assert {r["system"] for r in recs} == set(cfg.methods) | set(cfg.ablations)
    for r in recs:
        assert 0 <= r["last"] <= 1 and 0 <= r["avg"] <= 1 and len(r["a_t"]) == cfg.num_tasks
        assert r["avg"] == pytest.approx(np.mean(r["a_t"])) and r["last"] == r["a_t"][-1]
    for name in tables.TABLES:
        md, _ = tables.render(tables.TABLES[name], {((), 0): workdir})
        assert "HypCL-A (task weighting)" in md and "forgetting" in md
    assert all(p.exists() for p in tables.figure(tables.TABLES["main"], {((), 0): workdir},
                                                   tmp_path))  # fmt: skip


def test_paper_config_reads_512_d_clip_features_and_bad_files_name_the_fix(tmp_path):
    cfg = experiment.CONFIGS["paper"]
    assert cfg.setting == "folder" and cfg.features_dir and cfg.num_tasks == 10
    rng = np.random.default_rng(0)
    arrays = {"train_f": rng.normal(size=(4, 512)), "train_y": np.array([0, 1, 0, 1]),
              "test_f": rng.normal(size=(2, 512)), "test_y": np.array([1, 0]),
              "text": rng.normal(size=(2, 512))}  # fmt: skip
    np.savez(tmp_path / "features.npz", **arrays)
    train, test, text = load_features(tmp_path)
    assert train.f.shape == (4, 512) and np.allclose(np.linalg.norm(text, axis=1), 1)
    np.savez(tmp_path / "features.npz", **{**arrays, "test_y": np.array([1, 2])})
    with pytest.raises(ValueError, match=r"test_y must lie in 0..1"):
        load_features(tmp_path)
    del arrays["text"]
    np.savez(tmp_path / "features.npz", **arrays)
    with pytest.raises(ValueError, match=r"\['text'\] are missing"):
        load_features(tmp_path)
    with pytest.raises(ValueError, match="must divide"):
        experiment.Config(num_tasks=7)


def test_toy_clip_has_one_prompt_per_class():
    p = prompts()
    assert len(p) == 20 and len(set(p)) == 20
    assert p[7] == "a handwritten digit seven" and p[17] == "a photo of a sneaker"
