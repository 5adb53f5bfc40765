"""Multi-host on one machine (`launch/run.py --processes 2 --local-devices 4`, shared/
local_processes.py): smoke configs as 2 JAX processes of 4 CPU devices joined through a
coordinator on 127.0.0.1, against 1 process of 8 devices.

- Equality of the metrics (timings aside) for var_jepa (data-parallel pretraining, each process
  reading its rows of every batch), scale (Llama on a `data` mesh, the same) and paso (window
  slots in a `shard_map` over the 8 devices of both processes); one copy of every run file.
- var_jepa: kill -9 of one process (the launcher stops the other; the same command resumes from
  the last complete checkpoint) and SIGTERM to one process (both stop at the same step, write one
  checkpoint together, exit 0).
Kept small: var_jepa runs T-JEPA only, the other methods add compile time, not a multi-host path.
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUN = [sys.executable, str(ROOT / "launch" / "run.py")]
# the smoke config of each project, on a mesh over every device
MESHED = {
    "var_jepa": ("pretrain.data_parallel=True", "methods=('tjepa',)"),
    "scale": ("sharding='data'", "batch_size=8"),  # 8 rows: one per device
    "paso": ("devices=0", "windows=(8,)", "fixed_tol_windows=()"),  # a slot per device
}
TIMINGS = re.compile(r"seconds|speedup|_per_s")
TWO = ["--processes", "2", "--local-devices", "4"]


def command(project: str) -> list[str]:
    sets = [x for s in MESHED[project] for x in ("--set", s)]
    return [*RUN, f"projects/{project}", "--config", "smoke", *sets]


class Launch:
    """A run.py command in the background, its merged output collected line by line."""

    started: list["Launch"] = []

    def __init__(self, *args: str, workdir: pathlib.Path, env: dict, project: str = "var_jepa"):
        self.proc = subprocess.Popen(
            [*command(project), *args, "--workdir", str(workdir)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        Launch.started.append(self)

    def stop(self):
        """Kills what is left of a launch still running: its processes (in their own sessions;
        unreaped while the launcher lives, so their pids are not reused) and the launcher."""
        if self.proc.poll() is not None:
            return  # the launcher reaped every process before it exited
        for pid in map(int, re.findall(r"\b\d+: pid (\d+)", self.output)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.kill()
        self.proc.wait()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def pid(self, index: int, timeout: float = 60) -> int:
        """The pid of process `index`, from the launcher's first line."""
        t0 = time.time()
        while time.time() - t0 < timeout:
            m = re.search(rf"\b{index}: pid (\d+)", self.output)
            if m:
                return int(m.group(1))
            time.sleep(0.05)
        pytest.fail(f"no pid of process {index} in:\n{self.output}")

    def wait_for(self, path: pathlib.Path, timeout: float = 300) -> None:
        t0 = time.time()
        while not path.exists():
            if self.proc.poll() is not None:
                pytest.fail(f"the run ended before {path} appeared:\n{self.output}")
            if time.time() - t0 > timeout:
                self.proc.kill()
                pytest.fail(f"{path} did not appear within {timeout} s:\n{self.output}")
            time.sleep(0.05)

    def finish(self, timeout: float = 600) -> int:
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return self.proc.returncode


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    """A failed assertion or a timeout must not leave a 100,000-step run behind."""
    yield
    while Launch.started:
        Launch.started.pop().stop()


def _run(*args, workdir, env, project="var_jepa") -> dict:
    run = Launch(*args, workdir=workdir, env=env, project=project)
    assert run.finish() == 0, run.output
    return json.loads((workdir / "results.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory, fast_compile_env):
    """`runs(project, processes)` -> (metrics, run directory), each run once per module."""
    done = {}

    def get(project: str, processes: int):
        if (project, processes) not in done:
            workdir = tmp_path_factory.mktemp(f"{project}_{processes}")
            args = TWO if processes == 2 else []
            metrics = _run(*args, workdir=workdir, env=fast_compile_env, project=project)
            done[project, processes] = metrics, workdir
        return done[project, processes]

    return get


@pytest.mark.parametrize("project", list(MESHED))
def test_two_processes_of_four_devices_give_the_metrics_of_one_of_eight(project, runs):
    (one, one_dir), (two, two_dir) = runs(project, 1), runs(project, 2)
    assert one.keys() == two.keys()
    compared = [k for k in one if not TIMINGS.search(k)]
    assert len(compared) >= 5, compared
    for k in compared:
        assert two[k] == pytest.approx(one[k], rel=1e-5, abs=1e-5), k
    # the per-step losses too, and written once: process 0 alone writes run files
    rows = [[json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
            for d in (one_dir, two_dir)]  # fmt: skip
    assert len(rows[0]) == len(rows[1])
    for a, b in zip(*rows):
        if "loss" in a and "step" in a:
            assert (a["phase"], a["step"]) == (b["phase"], b["step"])
            assert b["loss"] == pytest.approx(a["loss"], rel=1e-5)
    info = json.loads((two_dir / "run.json").read_text())
    assert info["devices"].endswith("(cpu, 2 processes)") and info["devices"].startswith("8x")
    assert len(info["attempts"]) == 1


def test_kill_of_one_process_stops_both_and_the_same_command_resumes(
    tmp_path, runs, fast_compile_env
):
    run = Launch(*TWO, workdir=tmp_path, env=fast_compile_env)
    pids = run.pid(0), run.pid(1)
    run.wait_for(tmp_path / "checkpoints" / "tjepa" / "4" / "commit_success.txt")
    os.kill(pids[1], signal.SIGKILL)
    assert run.finish(timeout=120) == 1, run.output
    assert "error: process 1 of 2 was killed by SIGKILL" in run.output
    assert "Rerun the same command" in run.output
    with pytest.raises(ProcessLookupError):  # process 0 was stopped (and reaped) too
        os.kill(pids[0], 0)
    assert not (tmp_path / "results.json").exists()

    again = Launch(*TWO, workdir=tmp_path, env=fast_compile_env)
    assert again.finish() == 0, again.output
    assert re.search(r"tjepa: resuming from step [48] ", again.output), again.output
    resumed, unbroken = json.loads((tmp_path / "results.json").read_text()), runs("var_jepa", 2)[0]
    for k in unbroken:
        assert resumed[k] == pytest.approx(unbroken[k], rel=1e-6, abs=1e-7), k


def test_sigterm_to_one_process_stops_both_at_one_step_with_one_checkpoint(
    tmp_path, fast_compile_env
):
    long = ("--set", "pretrain.steps=100000", "--set", "pretrain.checkpoint_every=5")
    run = Launch(*TWO, *long, workdir=tmp_path, env=fast_compile_env)
    run.wait_for(tmp_path / "checkpoints" / "tjepa" / "5" / "commit_success.txt")
    os.kill(run.pid(1), signal.SIGTERM)  # process 1 alone: process 0 learns it collectively
    assert run.finish(timeout=120) == 0, run.output
    stopped = re.search(r"preempted: tjepa: SIGTERM at step (\d+); checkpoint saved", run.output)
    assert stopped, run.output
    step = int(stopped.group(1))
    saved = [int(p.name) for p in (tmp_path / "checkpoints" / "tjepa").iterdir()
             if p.name.isdigit()]  # fmt: skip
    assert step > 5 and max(saved) == step, (step, saved)
    assert (tmp_path / "checkpoints" / "tjepa" / str(step) / "commit_success.txt").exists()
