import json

from projects.var_jepa import tables
from projects.var_jepa.figures import collapse_monitor
from shared.tables import overrides_for


def test_collapse_monitor_reads_every_row_and_seed(tmp_path):
    table = tables.DIAGNOSTICS
    column = table.sections[0].columns[0]
    workdirs = {}
    for row in table.rows:
        for seed in table.seeds:
            # rows with equal overrides share one run directory, as in the real table
            key = (overrides_for(row, column), seed)
            d = workdirs.setdefault(key, tmp_path / f"run{len(workdirs)}")
            d.mkdir(exist_ok=True)
            lines = [{"phase": row.prefix, "step": s, "target_emb_var": 1.0 / s} for s in (50, 100)]
            with open(d / "metrics.jsonl", "a") as f:
                f.write("\n".join(map(json.dumps, lines)) + "\n")
    (path,) = collapse_monitor(table, workdirs, tmp_path / "out")
    assert path.exists() and path.stat().st_size > 1000
