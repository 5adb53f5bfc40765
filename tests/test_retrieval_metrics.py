"""Retrieval metrics (shared.metrics.retrieval) against closed forms and against pytrec_eval
(trec_eval's C code, what BEIR reports with) on random runs."""

import numpy as np
import pytest

from shared.metrics.retrieval import mrr_at_k, ndcg_at_k, recall_at_k, retrieval_metrics


def test_known_item_closed_forms():
    qrels = [{7: 1}] * 12
    ranked = [[7] + list(range(100, 111))]  # rank 1
    ranked += [list(range(100, 100 + r - 1)) + [7] + [200] for r in range(2, 13)]  # ranks 2..12
    nd, mrr = ndcg_at_k(ranked, qrels), mrr_at_k(ranked, qrels)
    for r in range(1, 13):
        assert nd[r - 1] == pytest.approx(1 / np.log2(r + 1) if r <= 10 else 0.0, abs=1e-15)
        assert mrr[r - 1] == pytest.approx(1 / r if r <= 10 else 0.0, abs=1e-15)
    assert recall_at_k(ranked, qrels, k=11).tolist() == [1.0] * 11 + [0.0]
    # graded: ideal order (2, 1); the run puts the rel-1 document first
    g = ndcg_at_k([[1, 2, 3]], [{1: 1, 2: 2, 3: 0}])[0]
    assert g == pytest.approx((1 + 2 / np.log2(3)) / (2 + 1 / np.log2(3)))
    assert retrieval_metrics([[]], [{0: 1}]) == {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}


def test_queries_without_relevant_documents_are_refused():
    with pytest.raises(ValueError, match="no relevant"):
        ndcg_at_k([[1]], [{1: 0}])
    with pytest.raises(ValueError, match="ranked lists"):
        recall_at_k([[1], [2]], [{1: 1}])


def test_random_runs_match_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    n_docs, n_q = 300, 40
    ranked, qrels, run_dict, qrel_dict = [], [], {}, {}
    for q in range(n_q):
        judged = rng.choice(n_docs, size=rng.integers(1, 25), replace=False)
        rels = {int(d): int(rng.integers(0, 3)) for d in judged}
        rels[int(judged[0])] = int(rng.integers(1, 3))  # at least one relevant
        scores = rng.permutation(n_docs)[: rng.integers(5, 150)]  # distinct scores: no ties
        docs = rng.choice(n_docs, size=len(scores), replace=False)
        order = np.argsort(-scores)
        ranked.append(docs[order].tolist())
        qrels.append(rels)
        run_dict[f"q{q}"] = {f"d{d}": float(s) for d, s in zip(docs, scores)}
        qrel_dict[f"q{q}"] = {f"d{d}": r for d, r in rels.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrel_dict, {"ndcg_cut.10", "recall.100"})
    want = ev.evaluate(run_dict)
    top10 = {q: dict(sorted(r.items(), key=lambda x: -x[1])[:10]) for q, r in run_dict.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrel_dict, {"recip_rank"}).evaluate(top10)
    nd, rec, mrr = ndcg_at_k(ranked, qrels), recall_at_k(ranked, qrels), mrr_at_k(ranked, qrels)
    for q in range(n_q):
        assert nd[q] == pytest.approx(want[f"q{q}"]["ndcg_cut_10"], abs=1e-12)
        assert rec[q] == pytest.approx(want[f"q{q}"]["recall_100"], abs=1e-12)
        assert mrr[q] == pytest.approx(rr[f"q{q}"]["recip_rank"], abs=1e-12)
