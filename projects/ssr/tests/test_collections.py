"""The collections: BEIR's published layout read from a generated folder, subsets, splits."""

import json

import pytest

from projects.ssr import collections_


def _write_beir(root, header=True):
    (root / "qrels").mkdir(parents=True)
    corpus = [{"_id": f"d{i}", "title": f"T{i}", "text": f"text {i}"} for i in range(6)]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n")
    queries = [{"_id": f"q{i}", "text": f"query {i}"} for i in range(4)]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries))
    head = "query-id\tcorpus-id\tscore\n" if header else ""
    (root / "qrels" / "test.tsv").write_text(head + "q0\td3\t1\nq0\td4\t2\nq1\td0\t0\nq2\td5\t1\n")
    (root / "qrels" / "train.tsv").write_text(head + "q3\td1\t1\n")


def test_beir_folder_is_read_with_its_graded_qrels(tmp_path):
    _write_beir(tmp_path / "toy")
    data = collections_.beir(tmp_path / "toy")
    assert data.name == "toy" and len(data.docs) == 6 and data.docs[2] == "T2\ntext 2"
    # q1 judges no document relevant: dropped (pytrec_eval would ignore it)
    assert data.queries["test"] == ["query 0", "query 2"]
    assert data.qrels["test"] == [{3: 1, 4: 2}, {5: 1}]
    assert data.queries["train"] == ["query 3"] and data.qrels["train"] == [{1: 1}]
    assert data.queries["validation"] == []
    _write_beir(tmp_path / "nohead", header=False)
    assert collections_.beir(tmp_path / "nohead").qrels["test"] == data.qrels["test"]


def test_beir_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="corpus.jsonl"):
        collections_.beir(tmp_path)
    _write_beir(tmp_path / "bad")
    (tmp_path / "bad" / "qrels" / "test.tsv").write_text("q0\td9\t1\n")
    with pytest.raises(ValueError, match="'d9' is not in corpus.jsonl"):
        collections_.beir(tmp_path / "bad")


def test_subset_keeps_the_judged_documents_and_reindexes(tmp_path):
    _write_beir(tmp_path / "toy")
    data = collections_.beir(tmp_path / "toy")
    sub = data.subset(4, {"test": 2, "train": 1})
    kept = [data.docs.index(d) for d in sub.docs]
    assert {3, 4, 5, 1} <= set(kept) and len(sub.docs) == 4
    for old, new in zip(data.qrels["test"], sub.qrels["test"]):
        assert {kept[d]: v for d, v in new.items()} == old
    with pytest.raises(ValueError, match="max_docs"):
        data.subset(2, {"test": 2})


def test_packaged_collections_have_exact_split_sizes_and_known_items():
    wiki = collections_.wikipedia(n_test=1000, n_val=500)
    assert len(wiki.queries["test"]) == 1000 and len(wiki.queries["validation"]) == 500
    assert len(wiki.docs) == 10033
    q0, (d0,) = wiki.queries["test"][0], wiki.qrels["test"][0]
    assert q0 and wiki.docs[d0]
    bbc = collections_.bbc(n_test=100, n_val=50, graded=True)
    rel = bbc.qrels["test"][0]
    assert sorted(set(rel.values())) == [1, 2] and list(rel.values()).count(2) == 1
    own = max(rel, key=rel.get)
    assert bbc.queries["test"][0] not in bbc.docs[own]  # the first sentence left its document
