"""What the smoke run through the real entry point (the shared `smoke_run` fixture) wrote."""

import json


def test_smoke_run_writes_the_run_directory(smoke_run):
    out, tmp_path = smoke_run("shaped_ope")
    assert out.returncode == 0, out.stdout + out.stderr
    metrics = json.loads((tmp_path / "results.json").read_text())
    assert "PDIS/chain_sparse/n20/mse" in metrics and "Hybrid/cancer/n40/bias_se" in metrics
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert len(summary["regime"]) == 2 * 2 * 2
    for f in ("config.json", "run.json", "metrics.jsonl", "estimates.npz"):
        assert (tmp_path / f).exists(), f
