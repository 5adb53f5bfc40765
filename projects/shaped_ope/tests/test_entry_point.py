"""The smoke config through the real entry point, in a subprocess."""

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_smoke_run_writes_the_run_directory(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "launch" / "run.py"), "projects/shaped_ope"]
        + ["--config", "smoke", "--workdir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    metrics = json.loads((tmp_path / "results.json").read_text())
    assert "PDIS/chain_sparse/n20/mse" in metrics and "Hybrid/cancer/n40/bias_se" in metrics
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["regime"]) == 2 * 2 * 2
    for f in ("config.json", "run.json", "metrics.jsonl", "estimates.npz"):
        assert (tmp_path / f).exists(), f
