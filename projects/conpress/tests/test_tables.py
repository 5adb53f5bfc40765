"""The tables and figures are rendered from one run's per-repeat metrics: mean ± std over the
repeats, the comparisons, the paper's numbers beside ConPress, and both figures."""

import json

import numpy as np

from projects.conpress import tables

VARIANTS = ("base", "control", "conpress", "conpress_unfiltered", "conpress_length")


def _fake_run(tmp_path, repeats=3):
    metrics = {}
    for r in range(repeats):
        rep = {}
        for i, v in enumerate(VARIANTS):
            for split in ("in_dist", "hard"):
                rep[f"{v}/{split}_tokens"] = 60.0 - 10 * (v.startswith("conpress")) + r
                rep[f"{v}/{split}_acc"] = 0.5 + 0.01 * i
                rep[f"{v}/{split}_truncated"] = 0.0
                if v != "base":
                    rep[f"{v}/{split}_reduction"] = 1 - rep[f"{v}/{split}_tokens"] / (60.0 + r)
            for b in (3, 4, 5, 6, 7, 8):
                rep[f"{v}/acc_b{b}"] = 0.1 * (9 - b)
            if v != "base":
                rep |= {f"{v}/sft_pairs": 100.0, f"{v}/sft_tokens": 50.0, f"{v}/sft_correct": 1.0}
        for n in (1, 2, 4):
            for _, k, _ in tables.RN_COLUMNS:
                rep[f"rn/N{n}/{k}"] = 1.0 / n + 0.01 * r
        metrics |= {f"rep{r}/{k}": v for k, v in rep.items()}
    (tmp_path / "results.json").write_text(json.dumps(metrics))
    return {((), 0): tmp_path}


def test_main_table_is_the_mean_over_repeats_with_comparisons(tmp_path):
    md, data = tables.render_main(tables.MAIN, _fake_run(tmp_path))
    lines = md.splitlines()
    base = next(x for x in lines if x.startswith("| base model | 61.000 ± 1.000"))
    assert "0.500" in base
    conpress = next(x for x in lines if x.startswith("| ConPress SFT (correct N = 4 segments) |"))
    # tokens 51 ± 1, reduction mean of 1 - (50 + r) / (60 + r), the paper's 0.59 beside it
    expected = np.mean([1 - (50 + r) / (60 + r) for r in range(3)])
    assert f"{expected:.3f}" in conpress and "(paper: 0.590)" in conpress
    assert "ConPress SFT (correct N = 4 segments) vs base model: better on tokens ↓" in md
    assert "| N = 4 | 0.260 ± 0.010 |" in md  # r(N) section: 1/4 + 0.01 r
    assert [s["title"][:12] for s in data["sections"]] == [
        "In-distribut", "Hard split (", "Accuracy by ", "SFT data (af", "Self-compres"
    ]  # fmt: skip


def test_figures_are_written(tmp_path):
    run = _fake_run(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    paths = tables.main_figures(tables.MAIN, run, out) + tables.smollm2_figure(
        tables.SMOLLM2, run, out
    )
    assert [p.name for p in paths] == [
        "main_rn.png", "main_tokens_vs_accuracy.png", "smollm2_rn.png"
    ]  # fmt: skip
    assert all(p.stat().st_size > 10_000 for p in paths)
