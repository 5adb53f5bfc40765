"""Table cells pool the subsample scores of every SFT seed: mean ± sd (ddof = 1) over them."""

import json

import numpy as np

from projects.safesci import tables


def test_main_table_pools_subsamples_over_repeats(tmp_path):
    recs = [{"model": "none", "repeat": 0, "subsets": {"tf": [50.0] * 5}}]
    for r in range(3):
        for v in ("helpful", "balanced", "refusal_heavy"):
            scores = [10.0 * r + i for i in range(5)]
            subsets = {"tf": scores, "refusal_risk": [90.0] * 5, "refusal_benign/mix": [r] * 5}
            recs.append({"model": v, "repeat": r, "subsets": subsets})
            recs.append({"model": v + "@sft_compounds", "repeat": r, "subsets": {"tf": [80.0] * 5}})
    (tmp_path / "repeats.jsonl").write_text("".join(json.dumps(x) + "\n" for x in recs))
    md, data = tables.MAIN.render(tables.MAIN, {((), 0): tmp_path})
    pooled = [10.0 * r + i for r in range(3) for i in range(5)]
    cell = f"{np.mean(pooled):.1f} ± {np.std(pooled, ddof=1):.1f}"
    row = next(x for x in md.splitlines() if x.startswith(f"| {tables.LABELS['balanced']} |"))
    assert row.split(" | ")[5] == cell and "| 50.0 |" in md
    assert row.split(" | ")[6] == "90.0"  # every subsample the same: no ± shown
    assert "–" in row  # columns nothing was measured for
    assert len(data["sections"][0]["comparisons"]) == 3
    template = md.split("## Refusal by request template")[1].split("## Knowledge items")[0]
    assert f"| {tables.LABELS['balanced']} | – | – | 1.0 ± 0.8 | – |" in template
    seen = md.split("## Knowledge items")[1]
    assert f"| {tables.LABELS['helpful']} | – | – | 80.0 |" in seen and "pretrained" not in seen


def test_tradeoff_figure(tmp_path):
    recs = [{"model": m, "repeat": r, "subsets": {"refusal_risk": [50.0 + r] * 5,
                                                  "refusal_benign": [10.0] * 5}}
            for m in ("helpful", "balanced") for r in range(3)]  # fmt: skip
    (tmp_path / "repeats.jsonl").write_text("".join(json.dumps(x) + "\n" for x in recs))
    (path,) = tables.tradeoff_figure(tables.MAIN, {((), 0): tmp_path}, tmp_path)
    assert path.name == "main_tradeoff.png" and path.stat().st_size > 10_000
