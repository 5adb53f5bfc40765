"""Reproduce a project's tables: run every row and seed, write results/<table>.md and .json.

    python launch/reproduce.py projects/var_jepa --table main
    python launch/reproduce.py projects/var_jepa            # every table of the project
    python launch/reproduce.py --all                         # every table of every project
    python launch/reproduce.py projects/var_jepa --table main --dry-run   # list the runs
    python launch/reproduce.py projects/var_jepa --shard 0/2 & ... --shard 1/2   # two workers

Each run lives in runs/tables/<project>/<hash of config, overrides, seed>/; a finished run is
reused and an interrupted one resumes from its checkpoints, so rerunning continues the work.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import registry  # noqa: E402


def run_one(
    project: str, exp, table, overrides: tuple[str, ...], seed: int
) -> tuple[dict, pathlib.Path]:
    """The run's metrics and its directory (computed unless a finished run exists)."""
    from shared import results
    from shared.config import apply_overrides, dumps

    cfg = apply_overrides(
        registry.get_config(exp, project, table.config), [*overrides, f"seed={seed}"]
    )
    digest = hashlib.sha256(dumps(cfg).encode()).hexdigest()[:16]
    workdir = registry.ROOT / "runs" / "tables" / project / digest
    done = workdir / "results.json"
    workdir.mkdir(parents=True, exist_ok=True)
    while not done.exists() and not _claim(workdir / "worker.pid"):
        time.sleep(5)  # another worker (--shard) is running this exact run
    if done.exists():
        return json.loads(done.read_text()), workdir
    results.write_run_info(workdir, dumps(cfg))
    metrics = exp.run(cfg, workdir)
    results.write_json(done, metrics)
    return metrics, workdir


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


def reproduce(project: str, table_name: str | None, dry_run: bool, shard: tuple[int, int]) -> None:
    from shared import results
    from shared.config import ConfigError, apply_overrides

    exp = registry.load_module(project, "experiment")
    tables_module = registry.load_module(project, "tables")
    tables = tables_module.TABLES
    if table_name is not None and table_name not in tables:
        raise SystemExit(
            f"error: project '{project}' has no table '{table_name}'; available: "
            f"{', '.join(tables)}"
        )
    for name in [table_name] if table_name else list(tables):
        table = tables[name]
        runs = table.runs()
        print(f"{project}/{name}: {len(runs)} runs of config '{table.config}'", flush=True)
        if dry_run:
            for overrides, seed in runs:
                try:  # validate every run's config even when not running it
                    apply_overrides(exp.CONFIGS[table.config], [*overrides, f"seed={seed}"])
                except ConfigError as e:
                    raise SystemExit(f"error: table {name}: {e}") from e
                print(f"  seed={seed} {' '.join(overrides)}")
            continue
        measured: dict[tuple[tuple[str, ...], int], dict] = {}
        workdirs: dict[tuple[tuple[str, ...], int], pathlib.Path] = {}
        index, count = shard
        for i, (overrides, seed) in enumerate(runs):
            if i % count != index:
                continue
            t0 = time.time()
            key = (overrides, seed)
            measured[key], workdirs[key] = run_one(project, exp, table, overrides, seed)
            print(
                f"  [{i + 1}/{len(runs)}] seed={seed} {' '.join(overrides)} "
                f"({time.time() - t0:.0f} s)",
                flush=True,
            )
        if count > 1:
            print(f"shard {index}/{count} done; run without --shard to write the table")
            continue
        write(project, table, measured, workdirs, results)
        figure = getattr(tables_module, "FIGURES", {}).get(name)
        if figure is not None:  # (table, run directories, results dir) -> written paths
            for path in figure(table, workdirs, registry.ROOT / "projects" / project / "results"):
                print(f"wrote {path.relative_to(registry.ROOT)}")


def write(project: str, table, measured: dict, workdirs: dict, results) -> None:
    from shared.tables import compare_rows, overrides_for

    rows = [r.label for r in table.rows]
    texts, data = [f"# {table.title}", ""], {"title": table.title, "sections": []}
    for sec in table.sections:
        cells = {}
        for r in table.rows:
            for c in sec.columns:
                key = f"{r.prefix}/{c.metric}"
                vals = [measured[(overrides_for(r, c), s)].get(key) for s in table.seeds]
                cells[(r.label, c.label)] = [v for v in vals if v is not None]
        md, js = results.render_table(
            title=sec.title,
            rows=rows,
            columns=[c.label for c in sec.columns],
            cells=cells,
            paper=dict(sec.paper),
            digits=sec.digits,
        )
        texts += [md, ""]
        verdicts = [compare_rows(a, b, sec.columns, cells) for a, b in table.compare]
        if verdicts:
            texts += ["\n".join(verdicts), ""]
            js["comparisons"] = verdicts
        data["sections"].append(js)
    seeds = ", ".join(map(str, table.seeds))
    info = [json.loads((w / "run.json").read_text()) for w in workdirs.values()]
    revisions = sorted({i.get("git_revision", "?") for i in info})
    foot = results.footer(
        f"config `{table.config}`, seeds {seeds}; runs at revision {', '.join(revisions)}"
    )
    texts += [*table.notes, "", foot]
    data["footer"] = foot
    out = registry.ROOT / "projects" / project / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{table.name}.md").write_text("\n".join(texts).rstrip() + "\n")
    results.write_json(out / f"{table.name}.json", data)
    print(f"wrote {(out / (table.name + '.md')).relative_to(registry.ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", nargs="?", help="projects/<name>")
    parser.add_argument("--table", help="one table (default: all of the project's tables)")
    parser.add_argument("--all", action="store_true", help="every table of every project")
    parser.add_argument("--dry-run", action="store_true", help="list and validate the runs only")
    parser.add_argument(
        "--shard",
        default="0/1",
        metavar="I/N",
        help="run only runs I, I+N, I+2N, ... (parallel workers); a final "
        "call without --shard reuses their results and writes the tables",
    )
    args = parser.parse_args(argv)
    try:
        shard = tuple(int(x) for x in args.shard.split("/"))
        assert len(shard) == 2 and 0 <= shard[0] < shard[1]
    except (ValueError, AssertionError):
        parser.error(f"--shard {args.shard!r} must be I/N with 0 <= I < N, e.g. 0/2")
    if not args.all and not args.project:
        parser.error("give a project or --all")
    registry.enable_compile_cache()
    projects = registry.all_projects() if args.all else [registry.resolve(args.project)]
    for p in projects:
        if (registry.ROOT / "projects" / p / "tables.py").exists():
            reproduce(p, None if args.all else args.table, args.dry_run, shard)
    return 0


if __name__ == "__main__":
    sys.exit(main())
