"""What is written after a table: the paired FP4 penalty and the gradient-norm figure, from
run directories."""

import json

from projects.attn_qat.figures import after_table
from shared.tables import Column, Row, Section, Table

TABLE = Table(
    name="t",
    title="T",
    config="smoke",
    seeds=(0, 1),
    rows=(Row("start", "pretrained"), Row("QAT", "attn_qat")),
    sections=(Section("s", (Column("loss", "full_loss"),)),),
)


def _run(path, seed, qat_gap):
    path.mkdir()
    metrics = {"attn_qat/full_loss": 2.0, "attn_qat/fp4_loss": 2.0 + qat_gap}
    if seed == 0:  # the start is evaluated by one run only
        metrics |= {"pretrained/full_loss": 1.5, "pretrained/fp4_loss": 1.75}
    (path / "results.json").write_text(json.dumps(metrics))
    lines = [{"phase": "finetune_attn_qat", "step": s, "grad_norm": 1.0 + s} for s in (1, 2, 3)]
    (path / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_paired_fp4_penalty_and_figure(tmp_path):
    runs = {((), s): _run(tmp_path / f"r{s}", s, gap) for s, gap in ((0, 0.25), (1, 0.75))}
    written = after_table(TABLE, runs, tmp_path)
    assert sorted(p.name for p in written) == ["t_fp4_gap.md", "t_grad_norm.png"]
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in (tmp_path / "t_fp4_gap.md").read_text().splitlines()
        if line.startswith("| ") and "seeds" not in line
    }
    assert rows["start"] == "0.2500"  # one seed: no spread
    assert rows["QAT"] == "0.5000 ± 0.3536"  # std(ddof=1) of (0.25, 0.75) = 0.25 * sqrt(2)
