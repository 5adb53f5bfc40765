"""The smoke run through launch/run.py (shared with tests/test_projects.py), its records, the
table and figure rendered from it, and the configs' checks."""

import dataclasses
import json

import numpy as np
import pytest

from projects.m_idol import experiment, tables
from projects.m_idol.train import VARIANTS


def test_smoke_run_records_every_variant_and_the_table_renders(smoke_run, tmp_path):
    proc, workdir = smoke_run("m_idol")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cfg = experiment.CONFIGS["smoke"]
    recs = [json.loads(x) for x in (workdir / "records.jsonl").read_text().splitlines()]
    assert [r["variant"] for r in recs] == list(VARIANTS)
    for r in recs:
        for k in tables.PROBES:
            assert 0 <= r[k] <= 1, k
        assert -1 <= r["silhouette"] <= 1 and 0 < r["erank"] <= cfg.model.dim
        assert 0 <= r["teacher_entropy"] <= np.log(cfg.model.prototypes) + 1e-6
        assert ("route_nmi" in r) == (r["variant"] != "dino")
    # the training loops logged every loss term and the collapse monitor
    rows = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if r.get("phase") == "full_seed0" and "step" in r]
    assert steps and {"dino", "route", "sep", "router_ce", "teacher_entropy"} <= set(steps[-1])
    assert all(np.isfinite(r["loss"]) for r in steps)
    md, _ = tables.render(tables.TABLES["main"], {((), 0): workdir})
    assert "M-IDoL: DINO + MoE, L_route + L_sep" in md and "kNN k=20" in md
    paths = tables.figure(tables.TABLES["main"], {((), 0): workdir}, tmp_path)
    assert all(p.exists() and p.suffix == ".png" for p in paths)


def test_configs_name_what_is_wrong():
    base = experiment.CONFIGS["cpu"]
    with pytest.raises(ValueError, match="choose from"):
        dataclasses.replace(base, variants=("dino", "ibot"))
    with pytest.raises(ValueError, match="orthogonal"):
        dataclasses.replace(base, model=dataclasses.replace(base.model, subspace=16))
    with pytest.raises(ValueError, match="data.data_dir"):
        dataclasses.replace(base, data=dataclasses.replace(base.data, source="folder"))
    paper = experiment.CONFIGS["paper"]
    assert paper.model.image_size == 224 and paper.crops.local_views == 8
    assert paper.train.batch_size == 1024 and paper.model.prototypes == 65536
