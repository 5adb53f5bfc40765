"""Reproduce a project's tables: run every row and seed, write results/<table>.md and .json.

    python launch/reproduce.py projects/var_jepa --table main
    python launch/reproduce.py projects/var_jepa            # every table of the project
    python launch/reproduce.py --all                         # every project, then RESULTS.md
    python launch/reproduce.py --summary                     # RESULTS.md from the committed tables
    python launch/reproduce.py projects/var_jepa --table main --dry-run   # list the runs
    python launch/reproduce.py projects/var_jepa --shard 0/2 & ... --shard 1/2   # two workers

Runs are cached under runs/tables/<project>/<hash of the config>/ and reused only while none of
the code they ran has changed (shared/executor.py); an interrupted run resumes. A committed table
needs a clean tree: `--draft` writes one anyway, titled DRAFT. Tables of `long` configs run only
with --long.
"""

from __future__ import annotations

import argparse
import pathlib
import shlex
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # without the install too

from shared import executor, provenance, results_summary  # noqa: E402
from shared.config import ConfigError, apply_overrides  # noqa: E402
from shared.table_writer import TableRefused, write_table  # noqa: E402


def reproduce(project: str, args: argparse.Namespace, command: str, refused: list[str]) -> None:
    tables_module = executor.load_module(project, "tables")
    tables = tables_module.TABLES
    if args.table is not None and args.table not in tables:
        raise SystemExit(
            f"error: project '{project}' has no table '{args.table}'; "
            f"available: {', '.join(tables)}"
        )
    for name in [args.table] if args.table else list(tables):
        table = tables[name]
        if table.config == "long" and not (args.long or args.table):
            print(f"{project}/{name}: a `long` table, skipped (pass --long to run it)")
            continue
        runs = table.runs()
        print(f"{project}/{name}: {len(runs)} runs of config '{table.config}'", flush=True)
        if args.dry_run:
            base = executor.get_config(project, table.config)
            for overrides, seed in runs:
                try:  # validate every run's config even when not running it
                    apply_overrides(base, [*overrides, f"seed={seed}"])
                except ConfigError as e:
                    raise SystemExit(f"error: table {name}: {e}") from e
                print(f"  seed={seed} {' '.join(overrides)}")
            continue
        dirty = provenance.dirty_paths()
        if dirty and not args.draft and args.shard == (0, 1):
            print(
                f"  warning: uncommitted code ({', '.join(dirty[:3])}): the runs are made and "
                "cached, but the table is not written (commit, rerun, or --draft)",
                flush=True,
            )
        measured, workdirs = {}, {}
        index, count = args.shard
        for i, (overrides, seed) in enumerate(runs):
            if i % count != index:
                continue
            t0 = time.time()
            key = (overrides, seed)
            try:
                measured[key], workdirs[key], reused = executor.cached_run(
                    project, table.config, overrides, seed
                )
            except executor.RunFailed as e:
                print(f"error: {e}", file=sys.stderr)
                refused.append(f"{project}/{name}")
                break
            how = "cached" if reused else f"{time.time() - t0:.0f} s"
            print(f"  [{i + 1}/{len(runs)}] seed={seed} {' '.join(overrides)} ({how})", flush=True)
        if count > 1:
            print(f"shard {index}/{count} done; run without --shard to write the table")
            continue
        if refused and refused[-1] == f"{project}/{name}":
            continue
        try:
            written = write_table(
                project,
                table,
                measured,
                workdirs,
                command=command,
                draft=args.draft,
                figures=getattr(tables_module, "FIGURES", {}).get(name),
            )
        except TableRefused as e:
            print(f"error: {project}/{name}: {e}", file=sys.stderr)
            refused.append(f"{project}/{name}")
            continue
        for path in written:
            print(f"wrote {path.relative_to(executor.ROOT)}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", nargs="?", help="projects/<name>")
    parser.add_argument("--table", help="one table (default: all of the project's tables)")
    parser.add_argument("--all", action="store_true", help="every project, then RESULTS.md")
    parser.add_argument("--summary", action="store_true", help="only rewrite RESULTS.md")
    parser.add_argument("--long", action="store_true", help="include tables of `long` configs")
    parser.add_argument("--draft", action="store_true", help="write from a dirty tree, as DRAFT")
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
        args.shard = tuple(int(x) for x in args.shard.split("/"))
        assert len(args.shard) == 2 and 0 <= args.shard[0] < args.shard[1]
    except (ValueError, AssertionError):
        parser.error(f"--shard {args.shard!r} must be I/N with 0 <= I < N, e.g. 0/2")
    if not (args.all or args.summary or args.project):
        parser.error("give a project, --all or --summary")
    command = shlex.join(["python", "launch/reproduce.py", *argv])
    if not args.summary:
        executor.enable_compile_cache()
        t0 = time.time()
        projects = executor.all_projects() if args.all else [executor.resolve(args.project)]
        refused: list[str] = []
        for p in projects:
            reproduce(p, args, command, refused)
        print(f"done in {time.time() - t0:.0f} s")
        if refused:
            print(f"not written: {', '.join(refused)}", file=sys.stderr)
            return 1
    if (args.all or args.summary) and not args.dry_run:
        path = results_summary.write(command)
        print(f"wrote {path.relative_to(executor.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
