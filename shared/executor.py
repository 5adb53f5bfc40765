"""The one way an experiment runs: the registry of projects, `execute` (a run directory with its
provenance around the project's `run`), and the cache of table runs.

    execute("var_jepa", cfg, workdir)              # what launch/run.py does
    cached_run("var_jepa", "cpu", ("data.name='letter'",), seed=1)   # what launch/reproduce.py does

A cached run lives in runs/tables/<project>/<hash of the config>/. It is reused only when its
config matches and none of the modules it ran has changed since (shared/provenance.py); a stale
run is discarded and computed again, never resumed, so a table never mixes code.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import time
from types import ModuleType
from typing import Any

from shared import provenance, results
from shared.config import apply_overrides, dumps
from shared.train.checkpoint import latest_checkpoint_step
from shared.train.preemption import Preempted

ROOT = provenance.REPO_ROOT
TABLE_RUNS = ROOT / "runs" / "tables"


def all_projects() -> list[str]:
    return sorted(p.parent.name for p in (ROOT / "projects").glob("*/experiment.py"))


def resolve(path_or_name: str) -> str:
    """'projects/var_jepa', 'projects/var_jepa/' or 'var_jepa' -> 'var_jepa', else fails."""
    name = pathlib.Path(path_or_name.rstrip("/")).name
    if name not in all_projects():
        raise SystemExit(
            f"error: unknown project '{path_or_name}'; available: "
            f"{', '.join('projects/' + p for p in all_projects())}"
        )
    return name


def load_module(project: str, module: str) -> ModuleType:
    return importlib.import_module(f"projects.{project}.{module}")


def get_config(project: str, config_name: str) -> Any:
    configs = load_module(project, "experiment").CONFIGS
    if config_name not in configs:
        raise SystemExit(
            f"error: project '{project}' has no config '{config_name}'; available: "
            f"{', '.join(configs)}"
        )
    return configs[config_name]


def enable_compile_cache() -> None:
    """Persistent XLA compilation cache under runs/: repeated runs (seeds of a table, resumes,
    tests) skip recompiling identical steps. JAX_COMPILATION_CACHE_DIR overrides the place."""
    import jax

    path = os.environ.get("JAX_COMPILATION_CACHE_DIR", str(ROOT / "runs" / ".jax_cache"))
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


class WorkdirConflict(ValueError):
    """The run directory holds another project's or another config's run."""


def check_workdir(project: str, cfg: Any, workdir: pathlib.Path) -> None:
    """Refuses to continue a run directory made by another project or config (a resume with
    another learning rate or model would mix two runs), naming what differs and the way out."""
    info_path, cfg_path = workdir / "run.json", workdir / "config.json"
    way_out = "choose a fresh --workdir, or pass --force-new to start over in this one"
    if info_path.exists():
        other = json.loads(info_path.read_text()).get("project", project)
        if other != project:
            raise WorkdirConflict(f"{workdir} holds a run of project '{other}'; {way_out}")
    if cfg_path.exists():
        saved, wanted = _flatten(json.loads(cfg_path.read_text())), _flatten(json.loads(dumps(cfg)))
        diff = [k for k in sorted(saved.keys() | wanted.keys()) if saved.get(k) != wanted.get(k)]
        if diff:
            shown = ", ".join(
                f"{k}: {saved.get(k)!r} there, {wanted.get(k)!r} now" for k in diff[:2]
            )
            more = f" and {len(diff) - 2} more" if len(diff) > 2 else ""
            raise WorkdirConflict(
                f"{workdir} holds a run with another config ({shown}{more}); {way_out}"
            )


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def checkpoints_in(workdir: pathlib.Path) -> dict[str, int]:
    """{phase: latest step} of the checkpoints a run directory holds."""
    root = workdir / "checkpoints"
    phases = sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []
    found = {p.name: latest_checkpoint_step(p) for p in phases}
    return {k: v for k, v in found.items() if v is not None}


def execute(
    project: str, cfg: Any, workdir: pathlib.Path, command: list[str] | None = None
) -> dict[str, float]:
    """Runs `projects.<project>.experiment.run(cfg, workdir)` and records what ran.

    run.json gets the revision, libraries, devices and the modules loaded at the start; one entry
    per attempt in `attempts` (command line, start and end time, the checkpoints it resumed
    from, how it ended: finished, preempted, or the error); when the run finishes, its wall time
    and the modules it imported ({path: sha256} and their fingerprint; those loaded at the start
    with their digest then), and results.json its
    metrics. A `Preempted` run leaves no results.json, and a second call with the same workdir
    resumes from its checkpoints. A workdir of another project or config is refused
    (`WorkdirConflict`)."""
    exp = load_module(project, "experiment")
    workdir = workdir.absolute()
    # Run files are process 0's (a multi-process run): the others neither check nor read them,
    # which they might catch half written.
    writer = results.is_writer()
    if writer:
        check_workdir(project, cfg, workdir)
    previous = workdir / "run.json"
    info = json.loads(previous.read_text()) if writer and previous.exists() else {}
    resumes = bool(info) and not (workdir / "results.json").exists()
    attempt = {
        "command": command if command is not None else sys.argv,
        "started": datetime.datetime.now().isoformat(),
        "resumed_from": checkpoints_in(workdir),
    }
    attempts = [*info.get("attempts", []), attempt]
    code_at_start = info["code_at_start"] if resumes else provenance.imported_modules(project)
    results.write_run_info(
        workdir, dumps(cfg), project=project, code_at_start=code_at_start, attempts=attempts
    )
    t0 = time.perf_counter()
    try:
        metrics = exp.run(cfg, workdir)
        status = "finished"
    except BaseException as e:  # recorded, then passed on unchanged
        status = "preempted" if isinstance(e, Preempted) else f"error: {type(e).__name__}"
        raise
    finally:  # preempted runs too: a resumed run's wall time adds up over its attempts
        wall = time.perf_counter() - t0 + (info.get("wall_s", 0.0) if resumes else 0.0)
        attempt.update(ended=datetime.datetime.now().isoformat(), status=status)
        results.update_run_info(workdir, wall_s=round(wall, 3), attempts=attempts)
    # Modules loaded at the start keep the digest they had then: an edit made while the run
    # computed must leave it stale, not be recorded as the code that produced it.
    modules = {**provenance.imported_modules(project), **code_at_start}
    results.update_run_info(
        workdir,
        code=modules,
        fingerprint=provenance.fingerprint(modules),
        finished=datetime.datetime.now().isoformat(),
    )
    results.write_json(workdir / "results.json", metrics)
    return metrics


def table_run_dir(project: str, cfg: Any) -> pathlib.Path:
    return TABLE_RUNS / project / hashlib.sha256(dumps(cfg).encode()).hexdigest()[:16]


def run_state(workdir: pathlib.Path) -> tuple[str, list[str]]:
    """("finished" | "resumable" | "stale" | "absent", changed modules) of a table run."""
    info_path = workdir / "run.json"
    if not info_path.exists():
        return "absent", []
    info = json.loads(info_path.read_text())
    if (workdir / "results.json").exists():
        if "code" not in info:  # made before runs recorded their code
            return "stale", ["(no code fingerprint recorded)"]
        changed = provenance.changed_since(info["code"])
        return ("stale" if changed else "finished"), changed
    changed = provenance.changed_since(info.get("code_at_start", {}))
    return ("stale" if changed else "resumable"), changed


def cached_run(
    project: str,
    config_name: str,
    overrides: tuple[str, ...],
    seed: int,
    *,
    in_process: bool = False,
) -> tuple[dict[str, float], pathlib.Path, bool]:
    """(metrics, run directory, reused) of config `config_name` with `overrides` and `seed`;
    computed unless a finished run of the same config and unchanged code exists.

    A run is computed in a fresh process (`launch/run.py --workdir`), so its fingerprint holds
    exactly the modules it imported, not those the caller had loaded (`in_process` is for
    tests)."""
    assignments = [*overrides, f"seed={seed}"]
    cfg = apply_overrides(get_config(project, config_name), assignments)
    workdir = table_run_dir(project, cfg)
    workdir.mkdir(parents=True, exist_ok=True)
    while not _claim(workdir / "worker.pid"):
        time.sleep(5)  # another worker (--shard) is running this exact run
    try:
        state, changed = run_state(workdir)
        if state == "finished":
            return json.loads((workdir / "results.json").read_text()), workdir, True
        if state == "stale":
            print(f"  discarding a stale run (changed: {', '.join(changed[:4])})", flush=True)
            for child in workdir.iterdir():
                if child.name != "worker.pid":
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
        if in_process:
            return execute(project, cfg, workdir), workdir, False
        cmd = [sys.executable, str(ROOT / "launch" / "run.py"), f"projects/{project}"]
        cmd += ["--config", config_name, "--workdir", str(workdir)]
        cmd += [x for a in assignments for x in ("--set", a)]
        proc = subprocess.run(cmd, cwd=ROOT)
        if proc.returncode != 0 or not (workdir / "results.json").exists():
            what = f"exit code {proc.returncode}" if proc.returncode else "preempted"
            raise RunFailed(
                f"{project} run {workdir.name} ({what}); rerun it alone: {shlex.join(cmd)}"
            )
        return json.loads((workdir / "results.json").read_text()), workdir, False
    finally:
        (workdir / "worker.pid").unlink(missing_ok=True)


class RunFailed(RuntimeError):
    """A table run ended without results (its own output says why); rerunning resumes it."""


def _claim(lock: pathlib.Path) -> bool:
    """Takes the run for this process unless a live process holds it (a dead one's is stale)."""
    if lock.exists():
        try:
            pid = int(lock.read_text())
            if pid != os.getpid():
                os.kill(pid, 0)
                return False
        except (ValueError, ProcessLookupError):
            pass
    lock.write_text(str(os.getpid()))
    return True
