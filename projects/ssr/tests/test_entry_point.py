"""The smoke run through launch/run.py, its records, and the table renderer on them."""

import json

from projects.ssr import experiment, tables


def test_smoke_run_records_every_system_and_the_table_renders(smoke_run, tmp_path):
    proc, workdir = smoke_run("ssr")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cfg = experiment.CONFIGS["smoke"]
    recs = [json.loads(x) for x in (workdir / "systems.jsonl").read_text().splitlines()]
    systems = {r["system"] for r in recs}
    want = {"bm25", "single_vector", "maxsim", *(f"plaid_k{k}" for k in cfg.search.kmeans)}
    for k in cfg.sae.ks:
        want |= {f"ssr_k{k}", f"ssr_k{k}_cls", *(f"ssr_k{k}_C{c}" for c in cfg.search.prune)}
    want.add(f"ssr_k{cfg.sae.contrastive_k}_nce")
    assert systems == want
    for r in recs:
        assert 0 <= r["ndcg@10"] <= 1 and r["latency_p95_ms"] >= r["latency_p50_ms"] > 0
        assert r["index_bytes"] > 0
    ssr = [r for r in recs if r["system"].startswith("ssr_k")]
    assert all(r["sae_coding_s"] > 0 and r["index_s"] > 0 for r in ssr)
    name = "main_wikipedia"
    md, _ = tables.render(tables.TABLES[name], {((), 0): workdir})
    assert "exhaustive MaxSim" in md and "UB pruning C = 10" in md and "SSR-CLS" in md
    assert all(p.exists() for p in tables.figure(tables.TABLES[name], {((), 0): workdir}, tmp_path))


def test_paper_config_reads_a_beir_folder_with_the_papers_sae_widths():
    cfg = experiment.CONFIGS["paper"]
    assert cfg.collection == "beir" and cfg.data.beir_dir
    assert 8192 <= cfg.sae.width <= 32768 and set(cfg.sae.ks) <= set(range(16, 65))
