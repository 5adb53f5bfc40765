"""The shared loop through the real entry point, in subprocesses, on scale's smoke config (the LM
trainer: checkpoints at every evaluation point): SIGTERM before training starts, SIGTERM and
kill -9 mid-run then resume (same results, same metrics.jsonl rows, same validation curve, each
attempt in run.json), an unreadable newest checkpoint on resume, and a diverged run."""

import json
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from shared import executor

RUN = [sys.executable, str(executor.ROOT / "launch" / "run.py"), "projects/scale"]
LONG = ["--config", "smoke", "--set", "steps=60"]  # a checkpoint every 3 steps (eval_every)


def launch(workdir: pathlib.Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*RUN, *args, "--workdir", str(workdir)],
        cwd=executor.ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def wait_for(path: pathlib.Path, proc: subprocess.Popen, timeout: float = 300) -> None:
    t0 = time.time()
    while not path.exists():
        if proc.poll() is not None:
            pytest.fail(f"ended before {path.name} appeared:\n{proc.stderr.read()}")
        if time.time() - t0 > timeout:
            proc.kill()
            pytest.fail(f"{path} did not appear in {timeout} s")
        time.sleep(0.02)


def rows(workdir: pathlib.Path) -> list[dict]:
    lines = (workdir / "metrics.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(x).items() if k != "items_per_s"} for x in lines]


def outcome(workdir: pathlib.Path) -> tuple[float, list, list]:
    results = json.loads((workdir / "results.json").read_text())
    curve = json.loads((workdir / "curve.json").read_text())
    return results["scale/val_loss"], curve["val_loss"], rows(workdir)


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("unbroken")
    code, _, err = finish(launch(workdir, *LONG))
    assert code == 0, err
    return outcome(workdir)


def test_sigterm_before_training_stops_saying_nothing_was_saved(tmp_path):
    proc = launch(tmp_path, *LONG)
    assert proc.stdout.readline().startswith("project scale")  # the handler is in place
    proc.send_signal(signal.SIGTERM)  # during data loading and model building
    code, _, err = finish(proc)
    assert code == 0, err
    assert "preempted: lm: SIGTERM before step 1; nothing saved" in err
    assert not (tmp_path / "checkpoints" / "lm").exists() or not any(
        p.name.isdigit() for p in (tmp_path / "checkpoints" / "lm").iterdir()
    )
    info = json.loads((tmp_path / "run.json").read_text())
    assert [a["status"] for a in info["attempts"]] == ["preempted"]


def test_sigterm_then_resume_matches_an_unbroken_run(tmp_path, unbroken):
    proc = launch(tmp_path, *LONG)
    wait_for(tmp_path / "checkpoints" / "lm" / "9" / "commit_success.txt", proc)
    proc.send_signal(signal.SIGTERM)
    code, _, err = finish(proc)
    assert code == 0, err  # stopped mid-segment ("checkpoint saved") or in an evaluation
    assert "checkpoint saved" in err or "its checkpoint at step" in err, err
    ckpts = tmp_path / "checkpoints" / "lm"
    stopped_at = max(int(p.name) for p in ckpts.iterdir() if p.name.isdigit())
    assert "resuming" not in err  # the phase's own evaluation segments resume nothing
    code, _, err = finish(launch(tmp_path, *LONG))
    assert code == 0, err
    assert f"lm: resuming from step {stopped_at} of checkpoint" in err
    assert outcome(tmp_path) == unbroken  # same loss, curve and log rows, none twice
    attempts = json.loads((tmp_path / "run.json").read_text())["attempts"]
    assert [a["status"] for a in attempts] == ["preempted", "finished"]
    assert attempts[0]["resumed_from"] == {} and attempts[1]["resumed_from"] == {"lm": stopped_at}
    assert attempts[1]["command"][-2:] == ["--workdir", str(tmp_path)]


def test_kill_9_then_an_unreadable_newest_checkpoint_falls_back(tmp_path, unbroken):
    proc = launch(tmp_path, *LONG)
    wait_for(tmp_path / "checkpoints" / "lm" / "12" / "commit_success.txt", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ckpts = tmp_path / "checkpoints" / "lm"
    newest = max(int(p.name) for p in ckpts.iterdir() if p.name.isdigit())
    for f in (ckpts / str(newest) / "state").rglob("*"):
        if f.is_file():
            f.write_bytes(b"\0" * 5)
    code, _, err = finish(launch(tmp_path, *LONG))
    assert code == 0, err
    assert f"checkpoint {ckpts / str(newest)} is unreadable" in err
    assert "resuming from step" in err and "Traceback" not in err
    assert outcome(tmp_path) == unbroken


def test_a_diverged_run_stops_with_one_line(tmp_path):
    code, _, err = finish(launch(tmp_path, "--config", "smoke", "--set", "lr=1e6"))
    assert code == 1, err
    lines = [x for x in err.splitlines() if x and not x.startswith("lm: step ")]  # progress
    assert len(lines) == 1, err
    assert lines[0].startswith("error: lm: validation loss") and "uniform model" in lines[0]
    assert not (tmp_path / "results.json").exists()
