import json

from projects.var_jepa import tables
from projects.var_jepa.figures import diagnostics
from shared.data.tabular import make_synthetic
from shared.tables import overrides_for


def test_diagnostics_figures_read_every_row_and_seed(tmp_path):
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
    names = make_synthetic(n=64).feature_names
    for d in workdirs.values():
        (d / "sigma_per_feature.json").write_text(json.dumps({n: 0.9 for n in names}))
    paths = diagnostics(table, workdirs, tmp_path / "out")
    assert [p.name for p in paths] == [
        "diagnostics_collapse_monitor.png",
        "diagnostics_latent_uncertainty.png",
    ]
    assert all(p.stat().st_size > 1000 for p in paths)
