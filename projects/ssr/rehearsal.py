"""Rehearsal of the `paper` config (shared/rehearsal.py): a tiny BEIR folder in the published
layout (corpus.jsonl, queries.jsonl, qrels/test.tsv and qrels/train.tsv) read through the real
loader, every system built and queried with the SAE and the K-means shrunk.

    python launch/rehearse.py projects/ssr
"""

from __future__ import annotations

import json
import pathlib

from shared.rehearsal import Rehearsal

TOPICS = ("river", "castle", "violin", "comet", "glacier", "harbour", "orchard", "volcano")


def write_data(directory: pathlib.Path) -> tuple[str, ...]:
    root = directory / "beir" / "tiny"
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    docs, queries, test, train = [], [], [], []
    for i, t in enumerate(TOPICS * 3):
        text = f"An article about the {t} number {i} and its long history."
        docs.append({"_id": f"d{i}", "title": f"The {t} {i}", "text": text})
        queries.append({"_id": f"q{i}", "text": f"history of {t} {i}"})
        (test if i % 3 else train).append(f"q{i}\td{i}\t1")
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    header = "query-id\tcorpus-id\tscore\n"
    (root / "qrels" / "test.tsv").write_text(header + "\n".join(test) + "\n")
    (root / "qrels" / "train.tsv").write_text(header + "\n".join(train) + "\n")
    return (f"data.beir_dir={str(root)!r}",)


def check(cfg, run_dir: pathlib.Path) -> list[str]:
    path = run_dir / "systems.jsonl"
    if not path.exists():
        return ["no systems.jsonl"]
    systems = {json.loads(line)["system"] for line in path.read_text().splitlines()}
    want = {"bm25", "single_vector", "maxsim", *(f"ssr_k{k}" for k in cfg.sae.ks)}
    return [f"system {s} missing from systems.jsonl" for s in sorted(want - systems)]


REHEARSAL = Rehearsal(
    data="a BEIR dataset folder (data.beir_dir): corpus.jsonl, queries.jsonl, qrels/test.tsv "
    "and, for the projection's training pairs, qrels/train.tsv",
    write_data=write_data,
    shrink=(
        "sae.width=64",  # each override is validated on its own: ks and contrastive_k in turn
        "sae.ks=(4, 32)",
        "sae.contrastive_k=4",
        "sae.ks=(4, 8)",
        "sae.steps=2",
        "sae.batch_size=64",
        "sae.contrastive_k=8",
        "sae.contrastive_pairs=4",
        "projection.steps=2",
        "projection.batch_size=4",
        "search.kmeans=(8,)",
        "search.rerank=8",
        "search.prune=(4,)",
        "num_seeds=1",
    ),
    check=check,
)
