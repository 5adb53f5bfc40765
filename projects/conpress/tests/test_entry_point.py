"""What the smoke run through the real entry point (`launch/run.py`, the session's shared
`smoke_run` fixture) measured, and the paper config's model layout."""

import json
import math

from projects.conpress import experiment


def test_smoke_run_through_launch(smoke_run):
    proc, workdir = smoke_run("conpress")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    metrics = json.loads((workdir / "results.json").read_text())
    cfg = experiment.CONFIGS["smoke"]
    for r in range(cfg.repeats):
        rep = f"rep{r}"
        # N = 1 is the denominator of r(N): over its own parsed outputs it is exactly 1.
        assert metrics[f"{rep}/rn/N1/r_all"] == 1.0
        assert metrics[f"{rep}/rn/N1/parse_failure"] == 0.0  # no markers to miss
        for n in cfg.ns:
            assert 0.0 <= metrics[f"{rep}/rn/N{n}/parse_failure"] <= 1.0
            assert 0.0 <= metrics[f"{rep}/rn/N{n}/acc"] <= 1.0
        for split in ("in_dist", "hard"):
            tokens = metrics[f"{rep}/base/{split}_tokens"]
            assert 0 < tokens <= cfg.sampling.max_new_per_question
        records = json.loads((workdir / rep / "records.json").read_text())
        assert sorted(records["rn"]) == sorted(str(n) for n in cfg.ns)
        failures = sum(records["rn"]["2"]["errors"].values())
        assert failures == round(metrics[f"{rep}/rn/N2/parse_failure"] * cfg.rn_questions / 2)
    # The mean over repeats is what the flat names hold.
    mean = sum(metrics[f"rep{r}/base/in_dist_tokens"] for r in range(cfg.repeats)) / cfg.repeats
    assert math.isclose(metrics["base/in_dist_tokens"], mean, rel_tol=1e-12)
    # Base training logged its steps; an untrained smoke model answers nothing, so the SFT
    # stages were skipped (min_sft_pairs=0) and said so.
    rows = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["phase"] == "base"] == [cfg.base.steps]
    assert metrics["pool/sft_examples"] == 0 and "SFT skipped" in proc.stdout + proc.stderr


def test_paper_layout_is_an_8b_llama():
    import dataclasses

    from flax import nnx

    from projects.conpress.models import LAYOUTS
    from shared.models.llama import Llama, count_params

    cfg = experiment.CONFIGS["paper"]
    layout = LAYOUTS[cfg.model.layout]

    def params(layers: int) -> int:  # abstract (no memory), a block or two for speed
        small = dataclasses.replace(layout, num_layers=layers)
        return count_params(nnx.eval_shape(lambda: Llama(small, rngs=nnx.Rngs(0))))

    per_block = params(2) - params(1)
    # DeepSeek-R1-Distill-Llama-8B (Llama-3.1-8B): 8,030,261,248 parameters, untied head.
    assert params(1) + per_block * (layout.num_layers - 1) == 8_030_261_248
    # Prompt + the 32k-token budget of the largest N fit its context; SFT rows too.
    assert cfg.sampling.max_new_total == 32768 and layout.max_seq_len >= 32768 + 1024
    assert cfg.sft_seq_len <= layout.max_seq_len
