"""Through the real entry point (`launch/run.py`) in subprocesses: smoke run, kill-and-resume,
SIGTERM and NaN handling (bad configs and data: tests/test_bad_invocations.py)."""

import json
import pathlib
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
RUN = [sys.executable, str(ROOT / "launch" / "run.py"), "projects/var_jepa", "--config", "smoke"]
# Long enough to be killed mid-way, short enough to finish quickly.
LONG = [
    "--set",
    "pretrain.steps=60",
    "--set",
    "pretrain.checkpoint_every=10",
    "--set",
    "methods=('tjepa', 'var_tjepa')",
]


def launch(*args, workdir, **kw):
    return subprocess.Popen(
        [*RUN, *args, "--workdir", str(workdir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kw,
    )


def finish(proc, timeout=600):
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def wait_for(path: pathlib.Path, proc, timeout=300):
    t0 = time.time()
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"process ended before {path} appeared:\n{proc.stdout.read()}")
        if time.time() - t0 > timeout:
            proc.kill()
            pytest.fail(f"{path} did not appear within {timeout}s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory, fast_compile_env):
    workdir = tmp_path_factory.mktemp("unbroken")
    code, out = finish(launch(*LONG, workdir=workdir, env=fast_compile_env))
    assert code == 0, out
    return json.loads((workdir / "results.json").read_text())


def test_smoke_run_writes_the_run_directory(smoke_run):
    proc, tmp_path = smoke_run("var_jepa")
    code, out = proc.returncode, proc.stdout + proc.stderr
    assert code == 0, out
    metrics = json.loads((tmp_path / "results.json").read_text())
    for key in (
        "raw_mlp/acc",
        "raw_gbdt/acc",
        "tjepa_linear/acc",
        "tjepa_mlp/f1",
        "var_tjepa_mlp/acc",
        "var_tjepa/sigma_ratio",
        "tjepa/eff_rank",
    ):
        assert 0 <= metrics[key] < 100, key
    # each probe also under its method's prefix (one ablation row shows probes and diagnostics)
    assert metrics["tjepa/linear_acc"] == metrics["tjepa_linear/acc"]
    assert metrics["var_tjepa/mlp_f1"] == metrics["var_tjepa_mlp/f1"]
    assert "| tjepa_linear |" in out  # the printed results table
    for f in ("config.json", "run.json", "metrics.jsonl", "sigma_per_feature.png"):
        assert (tmp_path / f).exists(), f
    run_info = json.loads((tmp_path / "run.json").read_text())
    assert {"git_revision", "libraries", "devices"} <= set(run_info)


def test_sigkill_then_resume_matches_an_unbroken_run(tmp_path, unbroken, fast_compile_env):
    proc = launch(*LONG, workdir=tmp_path, env=fast_compile_env)
    wait_for(tmp_path / "checkpoints" / "var_tjepa" / "20" / "commit_success.txt", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "results.json").exists()
    code, out = finish(launch(*LONG, workdir=tmp_path, env=fast_compile_env))
    assert code == 0, out
    resumed = json.loads((tmp_path / "results.json").read_text())
    assert resumed.keys() == unbroken.keys()
    for k in unbroken:
        assert resumed[k] == pytest.approx(unbroken[k], rel=1e-6, abs=1e-7), k


def test_sigterm_checkpoints_and_exits_zero(tmp_path, fast_compile_env):
    proc = launch(
        "--set",
        "pretrain.steps=100000",
        "--set",
        "methods=('tjepa',)",
        "--set",
        "pretrain.checkpoint_every=5",
        workdir=tmp_path,
        env=fast_compile_env,
    )
    wait_for(tmp_path / "checkpoints" / "tjepa" / "5" / "commit_success.txt", proc)
    proc.send_signal(signal.SIGTERM)
    code, out = finish(proc, timeout=120)
    assert code == 0, out
    assert "preempted" in out
    steps = [
        int(p.name) for p in (tmp_path / "checkpoints" / "tjepa").iterdir() if p.name.isdigit()
    ]
    assert max(steps) > 5


def test_nan_loss_stops_with_the_step(tmp_path, fast_compile_env):
    nan = ("--set", "pretrain.lr=1e30", "--set", "methods=('tjepa',)")
    code, out = finish(launch(*nan, workdir=tmp_path, env=fast_compile_env))
    assert code == 1
    assert "error: tjepa: loss is nan at step" in out and "Traceback" not in out
