"""Ranked-retrieval metrics as BEIR reports them (pytrec_eval semantics), per query.

A run is each query's ranked document ids (best first); qrels map a query's judged documents to
graded relevance (rel > 0 is relevant). With gain = rel (linear, BEIR's `ndcg_cut_10`):
  nDCG@k   Σ_{r ≤ k} rel_r / log2(r + 1), over the same sum for the judged documents sorted by rel
  Recall@k |relevant ∩ top-k| / |relevant|
  MRR@k    1 / rank of the first relevant document within the top k, else 0
Every query needs at least one relevant document (pytrec_eval drops queries without qrels; here
that is an error, so a silently smaller query set cannot happen).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def _check(ranked: Sequence[Sequence[int]], qrels: Sequence[Mapping[int, int]]) -> None:
    if len(ranked) != len(qrels):
        raise ValueError(f"{len(ranked)} ranked lists for {len(qrels)} queries' qrels")
    for q, rels in enumerate(qrels):
        if not any(r > 0 for r in rels.values()):
            raise ValueError(f"query {q} has no relevant document in its qrels")


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def ndcg_at_k(ranked, qrels, k: int = 10) -> np.ndarray:
    """[n_queries] nDCG@k with linear gains."""
    _check(ranked, qrels)
    disc = _discounts(k)
    out = np.empty(len(qrels))
    for q, (docs, rels) in enumerate(zip(ranked, qrels)):
        gains = np.array([max(rels.get(int(d), 0), 0) for d in list(docs)[:k]], np.float64)
        ideal = np.sort(np.array([r for r in rels.values() if r > 0], np.float64))[::-1][:k]
        out[q] = (gains * disc[: len(gains)]).sum() / (ideal * disc[: len(ideal)]).sum()
    return out


def recall_at_k(ranked, qrels, k: int = 100) -> np.ndarray:
    """[n_queries] share of the relevant documents (rel > 0) in the top k."""
    _check(ranked, qrels)
    out = np.empty(len(qrels))
    for q, (docs, rels) in enumerate(zip(ranked, qrels)):
        relevant = {d for d, r in rels.items() if r > 0}
        out[q] = len(relevant & {int(d) for d in list(docs)[:k]}) / len(relevant)
    return out


def mrr_at_k(ranked, qrels, k: int = 10) -> np.ndarray:
    """[n_queries] reciprocal rank of the first relevant document in the top k (0 if none)."""
    _check(ranked, qrels)
    out = np.zeros(len(qrels))
    for q, (docs, rels) in enumerate(zip(ranked, qrels)):
        for rank, d in enumerate(list(docs)[:k], start=1):
            if rels.get(int(d), 0) > 0:
                out[q] = 1.0 / rank
                break
    return out


def retrieval_metrics(ranked, qrels) -> dict[str, float]:
    """The table's means: nDCG@10, Recall@100, MRR@10."""
    return {
        "ndcg@10": float(ndcg_at_k(ranked, qrels, 10).mean()),
        "recall@100": float(recall_at_k(ranked, qrels, 100).mean()),
        "mrr@10": float(mrr_at_k(ranked, qrels, 10).mean()),
    }
