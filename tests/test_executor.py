"""The run cache and the table writer on a toy project inside a throwaway git repository: a
finished run is reused until code on its path changes (an unrelated project's edit does not
count), a dirty tree or a stale run is refused, --draft marks the table, the README region is
rewritten, and RESULTS.md gathers tables and claims."""

import dataclasses
import importlib.util
import json
import subprocess
import sys

import pytest

from shared import executor, provenance, results_summary, table_writer
from shared.tables import Claim, Column, Row, Section, Table

TOY = """
import dataclasses, json

@dataclasses.dataclass(frozen=True)
class Config:
    seed: int = 0  # the run's seed
    scale: float = 1.0  # multiplies the metric

CONFIGS = {"smoke": Config(), "cpu": Config(), "paper": Config(scale=2.0)}
CALLS = []

def run(cfg, workdir):
    CALLS.append(cfg.seed)
    return {"toy/value": cfg.scale * (cfg.seed + 1)}
"""

README = """# Toy: a paper

## Results

<!-- table: main -->
stale text
<!-- /table: main -->
"""


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _commit(root, message="c"):
    _git(root, "add", "-A")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A repo with projects/toy (experiment, README) and projects/other; the executor pointed
    at it. Yields (root, the loaded experiment module)."""
    root = tmp_path / "repo"
    (root / "projects" / "toy" / "results").mkdir(parents=True)
    (root / "projects" / "other").mkdir(parents=True)
    (root / "projects" / "toy" / "experiment.py").write_text(TOY)
    (root / "projects" / "toy" / "README.md").write_text(README)
    (root / "projects" / "other" / "experiment.py").write_text("X = 1\n")
    (root / ".gitignore").write_text("runs/\n")
    _git(root, "init", "-q")
    _commit(root)
    spec = importlib.util.spec_from_file_location(
        "toy_experiment", root / "projects" / "toy" / "experiment.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "toy_experiment", module)
    monkeypatch.setattr(provenance, "REPO_ROOT", root)
    monkeypatch.setattr(executor, "ROOT", root)
    monkeypatch.setattr(executor, "TABLE_RUNS", root / "runs" / "tables")
    monkeypatch.setattr(executor, "load_module", lambda project, name: module)
    return root, module


TABLE = Table(
    name="main",
    title="Toy table",
    config="cpu",
    seeds=(0, 1),
    rows=(Row("toy", "toy"),),
    sections=(Section("values", (Column("value", "value"),)),),
)


def _runs(table=TABLE):
    measured, workdirs, reused = {}, {}, []
    for overrides, seed in table.runs():
        key = (overrides, seed)
        measured[key], workdirs[key], r = executor.cached_run(
            "toy", "cpu", overrides, seed, in_process=True
        )
        reused.append(r)
    return measured, workdirs, reused


def test_finished_runs_are_reused_until_their_code_changes(toy):
    root, module = toy
    _, workdirs, reused = _runs()
    assert reused == [False, False] and module.CALLS == [0, 1]
    info = json.loads((workdirs[((), 0)] / "run.json").read_text())
    assert "projects/toy/experiment.py" in info["code"]
    assert info["fingerprint"] == provenance.fingerprint(info["code"]) and info["wall_s"] >= 0
    assert _runs()[2] == [True, True] and module.CALLS == [0, 1]

    (root / "projects" / "other" / "experiment.py").write_text("X = 2\n")  # unrelated project
    assert _runs()[2] == [True, True]

    path = root / "projects" / "toy" / "experiment.py"
    path.write_text(path.read_text() + "# an edit on the run's path\n")
    assert executor.run_state(workdirs[((), 0)]) == ("stale", ["projects/toy/experiment.py"])
    assert _runs()[2] == [False, False] and module.CALLS == [0, 1, 0, 1]


def test_an_edit_made_while_the_run_computes_leaves_it_stale(toy, monkeypatch):
    root, module = toy
    path = root / "projects" / "toy" / "experiment.py"
    run = module.run

    def edited_midway(cfg, workdir):
        path.write_text(path.read_text() + "# edited while the run computes\n")
        return run(cfg, workdir)

    monkeypatch.setattr(module, "run", edited_midway)
    _, workdirs, _ = _runs(dataclasses.replace(TABLE, seeds=(0,)))
    assert executor.run_state(workdirs[((), 0)]) == ("stale", ["projects/toy/experiment.py"])


def test_a_run_without_recorded_code_is_stale(toy):
    _, workdirs, _ = _runs()
    w = workdirs[((), 0)]
    info = json.loads((w / "run.json").read_text())
    del info["code"]
    (w / "run.json").write_text(json.dumps(info))
    assert executor.run_state(w)[0] == "stale"


def test_a_committed_table_needs_a_clean_tree_and_current_runs(toy):
    root, _ = toy
    measured, workdirs, _ = _runs()
    (root / "projects" / "toy" / "notes.py").write_text("# uncommitted code\n")
    with pytest.raises(table_writer.TableRefused, match="uncommitted code: projects/toy/notes.py"):
        table_writer.write_table("toy", TABLE, measured, workdirs, command="cmd")

    written = table_writer.write_table("toy", TABLE, measured, workdirs, command="cmd", draft=True)
    md = written[0].read_text()
    assert md.startswith("# DRAFT: Toy table") and "DRAFT (uncommitted code" in md

    _commit(root)
    md = table_writer.write_table("toy", TABLE, measured, workdirs, command="cmd")[0].read_text()
    rev = provenance.head_revision()
    assert md.startswith("# Toy table") and "DRAFT" not in md
    assert f"`cmd` at revision {rev} on" in md and "2 runs" in md and "wall time" in md
    assert "| toy | 1.500 ± 0.707 |" in md  # values 1 and 2
    readme = (root / "projects" / "toy" / "README.md").read_text()
    assert "stale text" not in readme and "### Toy table" in readme and "#### values" in readme
    assert readme.count("<!-- table: main -->") == 1 and "<!-- /table: main -->" in readme

    (root / "projects" / "toy" / "experiment.py").write_text(TOY + "# changed\n")
    _commit(root)  # clean again, but the runs were made by other code
    with pytest.raises(table_writer.TableRefused, match="2 runs not made by the current code"):
        table_writer.write_table("toy", TABLE, measured, workdirs, command="cmd")


def test_results_md_gathers_tables_and_claims(toy, monkeypatch):
    root, module = toy
    measured, workdirs, _ = _runs()
    table_writer.write_table("toy", TABLE, measured, workdirs, command="cmd")
    claims = (
        Claim("Toys work.", "holds", "table main"),
        Claim("Toys scale.", "not testable here", "no accelerator"),
    )
    tables_module = type(sys)("toy_tables")
    tables_module.TABLES, tables_module.CLAIMS = {"main": TABLE}, claims
    monkeypatch.setattr(executor, "all_projects", lambda: ["toy"])
    monkeypatch.setattr(executor, "load_module", lambda p, name: tables_module)
    text = results_summary.build("python launch/reproduce.py --summary")
    assert "| [toy](projects/toy/README.md) | Toy: a paper | 1 | 0 | 0 | 1 | 1 |" in text
    assert "| Toys work. | **holds** | table main |" in text
    assert f"[main](projects/toy/results/main.md): revision {provenance.head_revision()}" in text


def test_claims_take_only_the_four_verdicts():
    with pytest.raises(ValueError, match="verdict"):
        Claim("x", "mostly", "y")


def test_a_rendered_table_has_one_run_per_row_and_seed():
    table = dataclasses.replace(
        TABLE, sections=(), render=lambda t, w: ("body", {}), rows=(Row("r", "", (("k", 1),)),)
    )
    assert table.runs() == [(("k=1",), 0), (("k=1",), 1)]
