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
            d = tmp_path / f"{row.prefix}{len(workdirs)}"
            d.mkdir()
            lines = [{"phase": row.prefix, "step": s, "target_emb_var": 1.0 / s} for s in (50, 100)]
            d.joinpath("metrics.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
            workdirs[(overrides_for(row, column), seed)] = d
    (path,) = collapse_monitor(table, workdirs, tmp_path / "out")
    assert path.exists() and path.stat().st_size > 1000
