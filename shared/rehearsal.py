"""Rehearsals of the `paper` configs: a dry run of each before it goes to a pod.

A rehearsal runs a project's `paper` config end to end through `shared.executor.execute` (the
real code path: run.json, metrics.jsonl, results.json, orbax checkpoints) for a few steps, with
the model shrunk by `--set` overrides, on 8 devices with the paper's sharding, reading tiny files
that it writes in the paper's data layout through the project's real loaders. Then it checks
what a researcher would look at after the first minutes on the pod: the run finished with
metrics, every training phase checkpointed its last step, and the checkpointed state lived on
the mesh the paper config builds (read back from orbax's sharding metadata).

Each project declares `REHEARSAL = Rehearsal(...)` in `projects/<name>/rehearsal.py`;
`launch/rehearse.py projects/<name>` and `tests/test_rehearsals.py` run it with `rehearse`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import pathlib
import time
from collections.abc import Callable
from typing import Any

from shared import executor
from shared.config import apply_overrides

DEVICES = 8  # the CPU mesh of a rehearsal (XLA_FLAGS=--xla_force_host_platform_device_count=8)


@dataclasses.dataclass(frozen=True)
class Rehearsal:
    """How one project's `paper` config is rehearsed, and what its run must leave behind."""

    # --set overrides that shrink the run: tiny model, 2-3 steps, a checkpoint every step
    shrink: tuple[str, ...]
    # writes tiny files in the paper's data layout into a directory; returns the overrides that
    # point the config at them (None: the paper config reads packaged or generated data)
    write_data: Callable[[pathlib.Path], tuple[str, ...]] | None = None
    # phase (folder under checkpoints/) -> step of its last checkpoint
    checkpoints: dict[str, int] = dataclasses.field(default_factory=dict)
    # the mesh of every checkpointed array, axis -> size; None: one device (no mesh)
    mesh: dict[str, int] | None = None
    # mesh axes that must split at least one checkpointed array (FSDP / tensor parallel)
    sharded_axes: tuple[str, ...] = ()
    # further observations of the finished run (cfg, run directory) -> problems found; for what
    # the checkpoints cannot show (a mesh inside a project that has no checkpoints)
    check: Callable[[Any, pathlib.Path], list[str]] | None = None
    # replaces, for the run, what this machine lacks (an optional package) and says what it
    # replaced ("" when nothing); the report lists it
    stand_in: Callable[[], contextlib.AbstractContextManager[str]] | None = None
    # what the paper config reads, in one line (reports and the README)
    data: str = ""


@dataclasses.dataclass
class Report:
    project: str
    run_dir: pathlib.Path
    seconds: float
    metrics: dict[str, float]
    checkpoints: dict[str, int]  # phase -> latest step found
    meshes: list[str]  # distinct shardings of the checkpointed arrays, described
    problems: list[str]  # empty when the rehearsal passed
    stand_ins: list[str] = dataclasses.field(default_factory=list)

    def summary(self) -> str:
        state = "passed" if not self.problems else f"FAILED ({len(self.problems)} problems)"
        lines = [
            f"rehearsal of projects/{self.project} --config paper: {state} in {self.seconds:.1f} s",
            f"  run directory: {self.run_dir}",
            f"  metrics: {len(self.metrics)}; checkpoints: {self.checkpoints or 'none'}",
            *(f"  sharding: {m}" for m in self.meshes),
            *(f"  stand-in: {s}" for s in self.stand_ins),
            *(f"  problem: {p}" for p in self.problems),
        ]
        return "\n".join(lines)


def write_bpe_tokenizer(
    texts: list[str], path: pathlib.Path, vocab: int, special_tokens=("<s>", "</s>")
) -> None:
    """A byte-level BPE tokenizer.json trained on `texts`: the Hugging Face file a paper config
    reads beside its checkpoint, tiny (the rehearsal's `vocab` ids)."""
    import tokenizers
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    tok.train_from_iterator(texts, trainer)
    tok.save(str(path))


def load(project: str) -> Rehearsal:
    return executor.load_module(project, "rehearsal").REHEARSAL


def config(project: str, data_dir: pathlib.Path) -> Any:
    """The project's `paper` config pointed at freshly written tiny files and shrunk."""
    spec = load(project)
    data_dir.mkdir(parents=True, exist_ok=True)
    pointing = spec.write_data(data_dir) if spec.write_data else ()
    return apply_overrides(executor.get_config(project, "paper"), [*pointing, *spec.shrink])


def rehearse(project: str, workdir: pathlib.Path) -> Report:
    """Writes the tiny files under workdir/data, runs the shrunk `paper` config in workdir/run
    and checks what it left there; `Report.problems` lists every check that failed."""
    import jax

    if jax.device_count() != DEVICES:
        raise RuntimeError(
            f"a rehearsal needs {DEVICES} devices, {jax.device_count()} are visible: set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={DEVICES} before jax is imported "
            "(launch/rehearse.py does)"
        )
    spec = load(project)
    workdir = pathlib.Path(workdir).absolute()
    cfg = config(project, workdir / "data")
    run_dir = workdir / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with (spec.stand_in or (lambda: contextlib.nullcontext("")))() as stood_in:
        metrics = executor.execute(project, cfg, run_dir, ["rehearsal", project])
    seconds = time.perf_counter() - t0
    problems = _check_run(run_dir, metrics)
    found = executor.checkpoints_in(run_dir)
    for phase, step in spec.checkpoints.items():
        if found.get(phase) != step:
            problems.append(f"checkpoints/{phase}: latest step {found.get(phase)}, expected {step}")
    meshes, mesh_problems = _check_shardings(run_dir, found, spec)
    problems += mesh_problems
    if spec.check:
        problems += spec.check(cfg, run_dir)
    stand_ins = [stood_in] if stood_in else []
    return Report(project, run_dir, seconds, metrics, found, meshes, problems, stand_ins)


def _check_run(run_dir: pathlib.Path, metrics: dict[str, float]) -> list[str]:
    problems = []
    info = json.loads((run_dir / "run.json").read_text())
    if info["attempts"][-1].get("status") != "finished":
        problems.append(f"run.json: last attempt {info['attempts'][-1].get('status')}")
    if not str(info.get("devices", "")).startswith(f"{DEVICES}x"):
        problems.append(f"run.json: devices {info.get('devices')!r}, expected {DEVICES}")
    if not (run_dir / "results.json").exists() or not metrics:
        problems.append("no metrics in results.json")
    if not (run_dir / "metrics.jsonl").exists():
        problems.append("no metrics.jsonl")
    bad = sorted(k for k, v in metrics.items() if not math.isfinite(v))
    if bad:
        problems.append(f"non-finite metrics: {', '.join(bad[:5])}")
    return problems


def _shardings(step_dir: pathlib.Path) -> list[dict]:
    """orbax's record of how each array of the `state` item was laid out when it was saved."""
    path = step_dir / "state" / "_sharding"
    return [json.loads(v) for v in json.loads(path.read_text()).values()] if path.exists() else []


def describe(sharding: dict) -> str:
    if sharding.get("sharding_type") != "NamedSharding":
        return sharding.get("sharding_type", "unknown")
    axes = dict(zip(sharding["axis_names"], sharding["shape"]))
    return f"mesh {axes}, spec {tuple(sharding['partition_spec'])}"


def _check_shardings(
    run_dir: pathlib.Path, found: dict[str, int], spec: Rehearsal
) -> tuple[list[str], list[str]]:
    """(distinct layouts, problems): every checkpointed array on `spec.mesh` (one device when
    None) and each of `spec.sharded_axes` splitting at least one of them."""
    seen: set[str] = set()
    problems: list[str] = []
    split_by: set[str] = set()
    for phase, step in found.items():
        for s in _shardings(run_dir / "checkpoints" / phase / str(step)):
            seen.add(describe(s))
            named = s.get("sharding_type") == "NamedSharding"
            mesh = dict(zip(s["axis_names"], s["shape"])) if named else None
            if mesh != spec.mesh:
                problems.append(f"checkpoints/{phase}: an array on {describe(s)}, not {spec.mesh}")
            for entry in s.get("partition_spec", []) if named else []:
                split_by.update([entry] if isinstance(entry, str) else entry or [])
    missing = [a for a in spec.sharded_axes if a not in split_by]
    if missing:
        problems.append(f"no checkpointed array is split over mesh axes {missing}")
    return sorted(seen), sorted(set(problems))
