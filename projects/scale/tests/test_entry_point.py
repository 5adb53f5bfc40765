"""The smoke config through the real entry point (`launch/run.py`) in a subprocess."""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_smoke_run_through_launch(tmp_path):
    cmd = [sys.executable, str(ROOT / "launch" / "run.py"), "projects/scale", "--config", "smoke"]
    out = subprocess.run(
        [*cmd, "--workdir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout + out.stderr
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["scale/lr"] == 0.03 and 1.0 < res["scale/val_ppl"] < 257.0
    # SCALE keeps only the head's momentum and the 1-D Adam moments
    assert 0.0 < res["scale/state_vs_adamw"] < 0.5
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert curve["step"] == [3, 6] and len(curve["val_loss"]) == 2
