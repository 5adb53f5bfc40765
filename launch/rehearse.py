"""Rehearse a project's `paper` config: a few steps, model shrunk, 8 CPU devices, tiny files in
the paper's data layout, through the real entry path (shared/rehearsal.py says what is checked).

    python launch/rehearse.py projects/scale            # one project, in a temporary directory
    python launch/rehearse.py --all                     # every project
    python launch/rehearse.py projects/scale --workdir D --show-config

Exits 1 when a check failed (each problem is printed), 0 when every rehearsal passed.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

# 8 virtual CPU devices, before anything imports jax
_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_FLAG}".strip()
os.environ.setdefault("TQDM_DISABLE", "1")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # without the install too

from shared import executor, rehearsal  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="*", help="projects/<name> ...")
    parser.add_argument("--all", action="store_true", help="every project")
    parser.add_argument("--workdir", type=pathlib.Path, help="keep data and runs here")
    parser.add_argument(
        "--show-config", action="store_true", help="print the rehearsed config's overrides"
    )
    args = parser.parse_args(argv)
    names = executor.all_projects() if args.all else [executor.resolve(p) for p in args.projects]
    if not names:
        parser.error("give projects/<name> or --all")
    if args.show_config:
        for name in names:
            spec = rehearsal.load(name)
            print(f"projects/{name} --config paper (data: {spec.data or 'as configured'})")
            print("\n".join(f"  --set {s}" for s in spec.shrink))
        return 0
    executor.enable_compile_cache()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="rehearsal-") as tmp:
        root = (args.workdir or pathlib.Path(tmp)).absolute()
        for name in names:
            report = rehearsal.rehearse(name, root / name)
            print(report.summary(), flush=True)
            failed += bool(report.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
