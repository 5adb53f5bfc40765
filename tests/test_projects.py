"""Every project, one parametrized test each (a new project is covered by adding nothing):
its configs build, validate and round-trip through config.json; every table run builds; the
claims are declared; the README quotes each committed table verbatim; the smoke config runs
through `launch/run.py` and writes its run directory with the code fingerprint; and the project
imports only `shared`, `kernels_pallas` and itself."""

import ast
import dataclasses
import json
import math
import pathlib

import pytest

from shared import executor, provenance
from shared.config import apply_overrides, dumps, from_dict
from shared.table_writer import demoted, marker_pattern

ROOT = executor.ROOT
PROJECTS = executor.all_projects()
LAUNCH_MODULES = {"launch", *(p.stem for p in (ROOT / "launch").glob("*.py"))}


@pytest.mark.parametrize("project", PROJECTS)
def test_configs_build_validate_and_round_trip(project):
    configs = executor.load_module(project, "experiment").CONFIGS
    assert {"smoke", "cpu", "paper"} <= set(configs), "every project has smoke, cpu and paper"
    for name, cfg in configs.items():
        assert dataclasses.is_dataclass(cfg) and type(cfg).__dataclass_params__.frozen, name
        assert hasattr(cfg, "seed"), f"{name}: tables and --seed need a `seed` field"
        assert apply_overrides(cfg, [f"seed={cfg.seed}"]) == cfg  # __post_init__ checks pass
        assert from_dict(type(cfg), json.loads(dumps(cfg))) == cfg, f"{name}: config.json"


@pytest.mark.parametrize("project", PROJECTS)
def test_every_table_run_builds_and_claims_are_declared(project):
    mod = executor.load_module(project, "tables")
    assert mod.TABLES, "a project reproduces at least one table"
    for name, table in mod.TABLES.items():
        assert table.name == name
        base = executor.get_config(project, table.config)
        for overrides, seed in table.runs():
            apply_overrides(base, [*overrides, f"seed={seed}"])
    claims = getattr(mod, "CLAIMS", ())
    assert claims, "declare the paper's claims and their verdicts (CLAIMS in tables.py)"


@pytest.mark.parametrize("project", PROJECTS)
def test_readme_quotes_each_committed_table(project):
    """The README region of every table (declared, or written by a figure hook) equals the
    committed table, so README and tables cannot drift."""
    readme = (ROOT / "projects" / project / "README.md").read_text()
    tables = executor.load_module(project, "tables").TABLES
    results = ROOT / "projects" / project / "results"
    declared = [n for n, t in tables.items() if t.config != "long"]
    for name in sorted({*declared, *(p.stem for p in results.glob("*.md"))}):
        match = marker_pattern(name).search(readme)
        assert match, f"README.md needs a <!-- table: {name} --> ... <!-- /table: {name} --> region"
        committed = results / f"{name}.md"
        assert committed.exists(), f"results/{name}.md is not generated"
        assert match.group(2).rstrip() == demoted(committed.read_text()), (
            f"README region '{name}' differs from results/{name}.md: rerun "
            f"`python launch/reproduce.py projects/{project} --table {name}`"
        )


@pytest.mark.parametrize("project", PROJECTS)
def test_smoke_config_runs_through_the_entry_point(project, smoke_run):
    proc, workdir = smoke_run(project)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("config.json", "run.json", "results.json"):
        assert (workdir / name).exists(), name
    info = json.loads((workdir / "run.json").read_text())
    assert info["project"] == project and info["wall_s"] > 0
    assert f"projects/{project}/experiment.py" in info["code"]
    assert not provenance.changed_since(info["code"])
    assert info["fingerprint"] == provenance.fingerprint(info["code"])
    metrics = json.loads((workdir / "results.json").read_text())
    assert metrics and all(isinstance(v, int | float) for v in metrics.values())
    assert any(math.isfinite(v) for v in metrics.values())


def _imports(path: pathlib.Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize("project", PROJECTS)
def test_project_imports_only_the_library_and_itself(project):
    bad = []
    for path in sorted((ROOT / "projects" / project).rglob("*.py")):
        for name in _imports(path):
            top, _, rest = name.partition(".")
            other_project = top == "projects" and rest.split(".")[0] not in ("", project)
            if top in LAUNCH_MODULES or other_project:
                bad.append(f"{path.relative_to(ROOT)}: import {name}")
        if "sys.path" in path.read_text():
            bad.append(f"{path.relative_to(ROOT)}: edits sys.path")
    assert not bad, "a project imports only shared/, kernels_pallas/ and itself:\n" + "\n".join(bad)


def test_float4_projects_keep_the_fusion_emitters(project_env):
    """The end-to-end runs of the tests use the classic CPU emitters, which round float4 casts
    wrongly: a project whose code touches FP4 must be listed in the root conftest, to keep the
    fusion emitters."""
    uses = {p for p in PROJECTS
            if any(word in path.read_text() for path in (ROOT / "projects" / p).glob("*.py")
                   for word in ("float4", "fp4", "e2m1"))}  # fmt: skip
    assert uses, "the check finds the FP4 project (attn_qat)"
    missing = sorted(p for p in uses if "fusion_emitters=false" in project_env(p)["XLA_FLAGS"])
    assert not missing, f"add {missing} to FLOAT4_PROJECTS in the root conftest.py"


def test_cheap_compilation_sets_the_classic_emitters_and_restores_everything(cheap_compilation):
    """The options the unit tests of the cheap-compilation projects compile with (root conftest):
    XLA's cheap level and the classic emitters inside, neither after."""
    import jax
    from jax._src import compiler

    def overrides():
        return dict(compiler.get_compile_options(1, 1).env_option_overrides)

    assert "xla_cpu_use_fusion_emitters" not in overrides()
    assert not jax.config.read("jax_disable_most_optimizations")
    with cheap_compilation():
        assert overrides()["xla_cpu_use_fusion_emitters"] is False
        assert jax.config.read("jax_disable_most_optimizations")
    assert "xla_cpu_use_fusion_emitters" not in overrides()
    assert not jax.config.read("jax_disable_most_optimizations")
