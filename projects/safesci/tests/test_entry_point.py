"""What the smoke run through the real entry point (`launch/run.py`, the session's shared
`smoke_run` fixture) wrote, and the paper config's model layout."""

import json

from projects.safesci import experiment
from projects.safesci.harness import METRICS


def test_smoke_run_through_launch(smoke_run):
    proc, workdir = smoke_run("safesci")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    metrics = json.loads((workdir / "results.json").read_text())
    cfg = experiment.CONFIGS["smoke"]
    records = [json.loads(x) for x in (workdir / "repeats.jsonl").read_text().splitlines()]
    # the base model once, every SFT variant once per repeat, five subsets per metric
    expected = [("none", 0)] + [(v, r) for r in range(cfg.repeats) for v in cfg.models[1:]]
    expected += [(v + experiment.SEEN, r) for v, r in expected]  # knowledge of SFT compounds
    assert sorted((x["model"], x["repeat"]) for x in records) == sorted(expected)
    templates = {"refusal_risk/mix", "refusal_risk/weapon", "refusal_benign/mix",
                 "refusal_benign/store"}  # fmt: skip
    for x in records:
        assert set(x["subsets"]) <= set(METRICS) | templates and "format_fail" in x["subsets"]
        seen = x["model"].endswith(experiment.SEEN)  # knowledge items only: no refusal metrics
        assert seen == ("refusal_risk" not in x["subsets"]), x["model"]
        assert all(len(s) == 5 and all(0 <= v <= 100 for v in s) for s in x["subsets"].values())
    for v in cfg.models:
        pooled = [s for x in records if x["model"] == v for s in x["subsets"]["format_fail"]]
        assert metrics[f"{v}/format_fail"] == sum(pooled) / len(pooled)
    responses = (workdir / "responses" / "balanced_r1.jsonl").read_text().splitlines()
    assert len(responses) == 10 * (cfg.data.compounds - cfg.data.train_compounds)
    rows = [json.loads(x) for x in (workdir / "metrics.jsonl").read_text().splitlines()]
    assert {r["phase"] for r in rows} >= {"pretrain", "sft_balanced_r1"}


def test_paper_layout_is_llama_3_1_8b():
    import dataclasses

    from flax import nnx

    from shared.models.llama import SIZES, Llama, count_params

    cfg = experiment.CONFIGS["paper"]
    layout = SIZES[cfg.checkpoint.layout]

    def params(layers: int) -> int:  # abstract (no memory), a block or two for speed
        return count_params(
            nnx.eval_shape(lambda: Llama(dataclasses.replace(layout, num_layers=layers),
                                         rngs=nnx.Rngs(0)))
        )  # fmt: skip

    per_block = params(2) - params(1)
    assert params(1) + per_block * (layout.num_layers - 1) == 8_030_261_248  # Llama-3.1-8B
    assert (
        cfg.checkpoint.max_new_tokens == 2048 and cfg.checkpoint.sft_seq_len <= layout.max_seq_len
    )
    assert cfg.data.source == "files" and cfg.mesh_shape == (16, 8)
