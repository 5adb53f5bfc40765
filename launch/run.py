"""Run one experiment of a project.

    python launch/run.py projects/var_jepa [--config cpu] [--set a.b=v ...] [--workdir D] [--seed N]
    python launch/run.py --list

Makes the run directory (default runs/<project>/<config>/<time>/) and runs the project through
`shared.executor.execute`: config.json, run.json (revision, library versions, devices, the code
fingerprint), metrics.jsonl and results.json; prints the results. A --workdir that already holds
checkpoints resumes.
"""

from __future__ import annotations

import argparse
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # without the install too

from shared import executor  # noqa: E402


def format_results(metrics: dict[str, float]) -> str:
    """'method/metric' keys as a markdown table: methods as rows, metrics as columns."""
    rows: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        method, _, name = key.rpartition("/")
        rows.setdefault(method or "-", {})[name] = value
    cols = sorted({c for r in rows.values() for c in r})
    fmt = lambda v: "–" if v is None else (f"{v:.4g}" if math.isfinite(v) else str(v))
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += [f"| {m} | " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for m, r in rows.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", nargs="?", help="projects/<name>")
    parser.add_argument("--config", default="cpu", help="config name (default: cpu)")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable)",
    )
    parser.add_argument("--seed", type=int, help="shorthand for --set seed=N")
    parser.add_argument(
        "--workdir", type=pathlib.Path, help="run directory (resumes if it holds a checkpoint)"
    )
    parser.add_argument("--list", action="store_true", help="list projects and their configs")
    args = parser.parse_args(argv)

    if args.list:
        for name in executor.all_projects():
            exp = executor.load_module(name, "experiment")
            print(f"projects/{name}: {', '.join(exp.CONFIGS)}")
        return 0
    if not args.project:
        parser.error("give a project, e.g. projects/var_jepa (or --list)")

    from shared import distributed, results
    from shared.config import ConfigError, apply_overrides
    from shared.train import Preempted

    distributed.initialize()
    executor.enable_compile_cache()
    project = executor.resolve(args.project)
    cfg = executor.get_config(project, args.config)
    overrides = args.overrides + ([f"seed={args.seed}"] if args.seed is not None else [])
    try:
        cfg = apply_overrides(cfg, overrides)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.workdir:
        workdir = args.workdir.absolute()
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        workdir = results.new_run_dir(executor.ROOT / "runs", project, args.config)
    print(f"project {project}, config {args.config}, run directory {workdir}", flush=True)
    try:
        metrics = executor.execute(project, cfg, workdir)
    except Preempted as e:
        print(f"preempted: {e}; rerun with --workdir {workdir} to resume", file=sys.stderr)
        return 0
    print(format_results(metrics))
    print(f"results: {workdir / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
