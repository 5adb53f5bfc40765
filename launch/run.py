"""Run one experiment of a project.

    python launch/run.py projects/var_jepa [--config cpu] [--set a.b=v ...] [--workdir D] [--seed N]
    python launch/run.py projects/var_jepa --show-config [--set ...]   # every field, then exit
    python launch/run.py --list

Makes the run directory (default runs/<project>/<config>/<time>/) and runs the project through
`shared.executor.execute`: config.json, run.json (revision, library versions, devices, the code
fingerprint, each attempt's command line, times, resume points and exit status), metrics.jsonl
and results.json; prints the results. A --workdir that already holds checkpoints of the same
project and config resumes (another config is refused: --force-new starts over there).

Multi-host on one machine: `--processes N [--local-devices K]` runs N JAX processes of K CPU
devices each, joined like the hosts of a pod (shared/local_processes.py): the same code path as
launch/tpu_pod.sh and launch/slurm_gpu.sbatch.

SIGTERM (preemption) anywhere in the run stops it at the next safe point, saving a checkpoint
where a training loop runs, and exits 0; rerun with the same --workdir to resume. Known errors
(bad config, missing data, a diverged run, an unusable workdir or checkpoint) print one line,
`error: ...`, with the fix and exit non-zero; --debug shows their traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import os
import pathlib
import shutil
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # without the install too

from shared import executor  # noqa: E402
from shared.config import ConfigError  # noqa: E402


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


def show_config(cfg, prefix: str = "") -> list[str]:
    """`key = value` per field, nested groups dotted, with the declared default where the value
    differs from it."""
    lines = []
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            lines += show_config(value, f"{prefix}{f.name}.")
            continue
        if f.default is not dataclasses.MISSING:
            declared = f.default
        elif f.default_factory is not dataclasses.MISSING:
            declared = f.default_factory()
        else:
            declared = dataclasses.MISSING
        note = (
            ""
            if declared is dataclasses.MISSING or declared == value
            else f"  # default {declared!r}"
        )
        lines.append(f"{prefix}{f.name} = {value!r}{note}")
    return lines


def prepare_workdir(workdir: pathlib.Path, force_new: bool) -> None:
    """Makes `workdir` (a writable directory), emptied first with `force_new` when it holds a
    run; raises `UsageError` naming the problem otherwise."""
    if workdir.exists() and not workdir.is_dir():
        raise UsageError(f"--workdir {workdir} is a file; give a directory")
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        probe = workdir / f".write_test.{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"--workdir {workdir} is not a writable directory ({e.strerror})") from e
    if force_new:
        if not any((workdir / n).exists() for n in ("run.json", "config.json")):
            if any(workdir.iterdir()):
                raise UsageError(
                    f"--force-new: {workdir} is not a run directory (no run.json); "
                    "nothing was deleted: empty it yourself or choose another --workdir"
                )
            return
        for child in workdir.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        print(f"--force-new: emptied {workdir}", file=sys.stderr, flush=True)


def _one_line_usage_error(message: str):
    """argparse's errors as one line (its default prints the usage block first)."""
    print(f"error: {message} (see python launch/run.py --help)", file=sys.stderr)
    sys.exit(2)


class UsageError(Exception):
    """A bad command line or run directory."""


def known_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message says what went wrong and how to fix it: printed without a
    traceback."""
    from shared.data.resolver import MissingDataError
    from shared.train import DivergedError, NonFiniteLossError
    from shared.train.checkpoint import CheckpointError

    return (
        ConfigError,
        UsageError,
        executor.WorkdirConflict,
        MissingDataError,
        NonFiniteLossError,
        DivergedError,
        CheckpointError,
    )


def quiet_library_logs() -> None:
    """orbax and absl log warnings (e.g. about read-only checkpoint managers) that concern us,
    not the user; errors still show."""
    logging.getLogger("absl").setLevel(logging.ERROR)
    try:
        from absl import logging as absl_logging

        absl_logging.set_verbosity(absl_logging.ERROR)
    except ImportError:
        pass


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
    parser.add_argument(
        "--force-new",
        action="store_true",
        help="empty the --workdir's earlier run first instead of resuming it",
    )
    parser.add_argument(
        "--show-config", action="store_true", help="print the resolved config and exit"
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        help="run as N JAX processes on this machine, joined like the hosts of a pod",
    )
    parser.add_argument(
        "--local-devices",
        type=int,
        default=1,
        help="with --processes: CPU devices per process (default 1)",
    )
    parser.add_argument("--list", action="store_true", help="list projects and their configs")
    parser.add_argument("--debug", action="store_true", help="tracebacks for known errors too")
    parser.error = _one_line_usage_error
    args = parser.parse_args(argv)
    command = [sys.executable, *(sys.argv if argv is None else [__file__, *argv])]
    try:
        return _main(parser, args, command)
    except known_errors() as e:
        if args.debug:
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2 if isinstance(e, ConfigError | UsageError) else 1


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace, command: list[str]) -> int:
    if args.list:
        for name in executor.all_projects():
            exp = executor.load_module(name, "experiment")
            print(f"projects/{name}: {', '.join(exp.CONFIGS)}")
        return 0
    if not args.project:
        parser.error("give a project, e.g. projects/var_jepa (or --list)")

    from shared import distributed, results

    distributed.initialize()  # first: before anything (a project's import) touches a device
    from shared.config import apply_overrides
    from shared.train import Preempted, preemption

    project = executor.resolve(args.project)
    cfg = executor.get_config(project, args.config)
    overrides = args.overrides + ([f"seed={args.seed}"] if args.seed is not None else [])
    cfg = apply_overrides(cfg, overrides)
    if args.show_config:
        print(f"# projects/{project} --config {args.config}")
        print("\n".join(show_config(cfg)))
        return 0
    if args.processes < 1 or args.local_devices < 1:
        raise UsageError("--processes and --local-devices must be at least 1")
    if args.local_devices > 1 and args.processes == 1:
        raise UsageError("--local-devices goes with --processes N (N >= 2)")
    if args.workdir:
        workdir = args.workdir.absolute()
        if results.is_writer():  # one process of a multi-process run prepares (and empties) it
            prepare_workdir(workdir, args.force_new)
    elif distributed.process_count() > 1:
        raise UsageError("a multi-process run needs --workdir: one directory for every process")
    else:
        workdir = results.new_run_dir(executor.ROOT / "runs", project, args.config)
    if args.processes > 1:  # this process only launches; each child runs the command below
        from shared import local_processes

        child = [sys.executable, str(pathlib.Path(__file__).resolve()), f"projects/{project}"]
        child += ["--config", args.config, "--workdir", str(workdir)]
        child += [x for o in overrides for x in ("--set", o)] + ["--debug"] * args.debug
        return local_processes.run(child, args.processes, args.local_devices, workdir)
    preemption.install()
    quiet_library_logs()
    executor.enable_compile_cache()
    print(f"project {project}, config {args.config}, run directory {workdir}", flush=True)
    try:
        metrics = executor.execute(project, cfg, workdir, command)
    except Preempted as e:
        print(f"preempted: {e}; rerun with --workdir {workdir} to resume", file=sys.stderr)
        return 0
    print(format_results(metrics))
    print(f"results: {workdir / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
