"""What the smoke run through the real entry point (`launch/run.py`; the session's shared
`smoke_run` fixture) measured."""

import json
import math


def test_smoke_run_through_launch(smoke_run):
    out, tmp_path = smoke_run("attn_qat")
    assert out.returncode == 0, out.stdout + out.stderr
    metrics = json.loads((tmp_path / "results.json").read_text())
    for prefix in ("pretrained", "attn_qat"):
        for key in ("full_loss", "full_ppl", "full_acc", "fp4_loss", "fp4_ppl", "fp4_acc"):
            assert math.isfinite(metrics[f"{prefix}/{key}"]), (prefix, key)
        assert math.exp(metrics[f"{prefix}/fp4_loss"]) == metrics[f"{prefix}/fp4_ppl"]
    # FP4 inference is a different forward from full precision (the mode reaches the kernel).
    assert metrics["pretrained/fp4_loss"] != metrics["pretrained/full_loss"]
    # One logged gradient norm per step of every phase, and the summary built from them.
    records = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    norms = [r["grad_norm"] for r in records if r.get("phase") == "finetune_attn_qat"]
    assert len(norms) == 3 and all(n > 0 for n in norms)
    assert metrics["attn_qat/gnorm_max"] == max(norms)
    assert len([r for r in records if r.get("phase") == "pretrain"]) == 2
