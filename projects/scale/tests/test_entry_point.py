"""What the smoke run through the real entry point (the shared `smoke_run` fixture) measured."""

import json


def test_smoke_run_through_launch(smoke_run):
    out, tmp_path = smoke_run("scale")
    assert out.returncode == 0, out.stdout + out.stderr
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["scale/lr"] == 0.03 and 1.0 < res["scale/val_ppl"] < 257.0
    # SCALE keeps only the head's momentum and the 1-D Adam moments
    assert 0.0 < res["scale/state_vs_adamw"] < 0.5
    curve = json.loads((tmp_path / "curve.json").read_text())
    assert curve["step"] == [3, 6] and len(curve["val_loss"]) == 2
