"""The smoke run through launch/run.py, its records, the table renderer and figures on them, and
the configs' and local loader's checks."""

import json

import numpy as np
import pytest

from projects.lfpm import experiment, tables, tasks
from shared.config import ConfigError, apply_overrides


def test_smoke_run_records_every_cell_and_the_table_renders(smoke_run, tmp_path):
    proc, workdir = smoke_run("lfpm")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cfg = experiment.CONFIGS["smoke"]
    recs = [json.loads(x) for x in (workdir / "records.jsonl").read_text().splitlines()]
    cells = {(r["attack"], r["merge"], r["lam"], r["defense"]) for r in recs}
    for v in cfg.attack.variants:
        todo = cfg.defense.defenses if v in cfg.defense.defend else ("none",)
        for m in cfg.merge.methods:
            for lam in cfg.merge.lams:
                assert {(v, m, lam, d) for d in todo} <= cells
    assert ("-", "pretrained", 0.0, "none") in cells
    for r in recs:
        assert 0 <= r["asr"] <= 1 and 0 <= r["ca_mean"] <= 1
        assert set(r) >= {f"ca_{t}" for t in experiment.MNIST_TASKS}
    path = [json.loads(x) for x in (workdir / "path.jsonl").read_text().splitlines()]
    assert {p["defense"] for p in path} == {"lfpm_single", "lfpm_path"}
    assert len(path) == 2 * cfg.figure.path_grid
    ctl = json.loads((workdir / "ctl.json").read_text())
    assert len(ctl["pairs"]) == 3
    for layers in ctl["pairs"].values():
        assert set(layers) == {f"conv{i}" for i in range(len(cfg.encoder.widths))} | {"proj"}
        for errs in layers.values():  # α = 0 and α = 1 are the endpoints: no error
            assert errs[0] < 1e-5 and errs[-1] < 1e-5
    workdirs = {((), s): workdir for s in (0,)}
    md, data = tables.render(tables.TABLES["table1_full"], workdirs)
    assert "LFPM path (S = 8)" in md and "BadMerging" in md and "alone: fashion" in md
    assert len(data["records"]) == len(recs)
    paths = tables.figure(tables.TABLES["table1_full"], workdirs, tmp_path)
    assert len(paths) == 2 and all(p.exists() for p in paths)


def test_table_runs_and_notes_state_the_defenders_knowledge():
    for name, table in tables.TABLES.items():
        assert [dict(r.overrides)["finetune"] for r in table.rows] == [name.split("_")[1]]
        assert "trigger is KNOWN" in " ".join(table.notes)
        assert len(table.runs()) == 3  # one run per seed


def test_configs_reject_inconsistent_fields():
    cpu = experiment.CONFIGS["cpu"]
    with pytest.raises(ConfigError):
        apply_overrides(cpu, ["data.attacked='cifar'"])
    with pytest.raises(ConfigError):
        apply_overrides(cpu, ["defense.defenses=('none', 'magic')"])
    with pytest.raises(ConfigError):
        apply_overrides(cpu, ["data.source='local'"])  # no data_dir
    paper = experiment.CONFIGS["paper"]
    assert paper.encoder.kind == "vit" and paper.encoder.width == 768 and paper.encoder.depth == 12
    assert len(paper.data.tasks) == 8


def test_local_loader_reads_the_layout_and_names_bad_fields(tmp_path):
    root = tmp_path / "tasks"
    (root / "a").mkdir(parents=True)
    x = np.zeros((20, 8, 8, 3), np.uint8)
    np.savez(root / "a" / "train.npz", x=x, y=np.arange(20) % 4)
    np.savez(root / "a" / "test.npz", x=x[:10], y=np.arange(10) % 4)
    t = tasks.load_local_task(root, "a", 100, 100, 0.1, seed=0)
    assert t.num_classes == 4 and t.x_train.dtype == np.float32 and len(t.x_clean) == 2
    np.savez(root / "a" / "test.npz", x=x[:10].astype(np.float32), y=np.arange(10))
    with pytest.raises(ValueError, match="uint8"):
        tasks.load_local_task(root, "a", 100, 100, 0.1, seed=0)
    np.savez(root / "a" / "test.npz", images=x[:10], y=np.arange(10))
    with pytest.raises(ValueError, match="'x' and 'y'"):
        tasks.load_local_task(root, "a", 100, 100, 0.1, seed=0)
    with pytest.raises(FileNotFoundError, match="train.npz"):
        tasks.load_local_task(root, "b", 100, 100, 0.1, seed=0)
