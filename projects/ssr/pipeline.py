"""One SSR run: encode the collection once, then per seed train the projection and the SAEs and
build, query and time every index. Writes systems.jsonl (one record per system and seed) and
training.json (loss curves); returns the means over seeds as metrics."""

from __future__ import annotations

import json
import pathlib
import time
from collections.abc import Callable

import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from projects.ssr import collections_
from projects.ssr.bm25 import BM25
from projects.ssr.inverted_index import InvertedIndex
from projects.ssr.late_interaction import TokenCollection, maxsim_dense, top_k
from projects.ssr.plaid import PlaidIndex
from projects.ssr.projection import padded, train_projection
from projects.ssr.sae import TopKSAE, sparse_codes
from projects.ssr.sae_train import train_sae
from projects.ssr.token_encoder import TokenEncoder
from shared.metrics.retrieval import retrieval_metrics
from shared.results import append_metrics, write_json

METRICS = ("ndcg@10", "recall@100", "mrr@10", "latency_p50_ms", "latency_p95_ms", "index_bytes")


def load_collection(cfg) -> collections_.RetrievalSet:
    d = cfg.data
    if cfg.collection == "beir":
        full = collections_.beir(d.beir_dir, d.beir_split)
    elif cfg.collection == "wikipedia":
        full = collections_.wikipedia(n_test=d.test_queries, n_val=d.validation_queries)
    else:
        n_test = min(d.test_queries, 500)
        full = collections_.bbc(n_test, min(d.validation_queries, 250),
                                graded=cfg.collection == "bbc_graded")  # fmt: skip
    counts = {"train": d.train_queries, "validation": d.validation_queries,
              "test": d.test_queries}  # fmt: skip
    if cfg.collection == "bbc_graded":  # same-topic documents are judged: keep the whole set
        return full.subset(len(full.docs), counts)
    return full.subset(min(d.max_docs, len(full.docs)), counts)


def evaluate(search: Callable[[int], np.ndarray], qrels: list[dict], warm: int = 3) -> dict:
    """Searches every query one by one (after `warm` untimed ones): metrics and latency."""
    for i in range(min(warm, len(qrels))):
        search(i)
    ranked, times = [], []
    for i in range(len(qrels)):
        t = time.perf_counter()
        ranked.append(search(i))
        times.append(time.perf_counter() - t)
    out = retrieval_metrics(ranked, qrels)
    out["latency_p50_ms"] = float(np.median(times) * 1e3)
    out["latency_p95_ms"] = float(np.percentile(times, 95) * 1e3)
    return out


def _rows(c: TokenCollection, i: int) -> slice:
    return slice(int(c.offsets[i]), int(c.offsets[i + 1]))


def _pair_sampler(q: TokenCollection, d: TokenCollection, pairs: np.ndarray, n: int):
    def sample(rng):
        b = pairs[rng.choice(len(pairs), min(n, len(pairs)), replace=False)]
        return (*padded(q, b[:, 0]), *padded(d, b[:, 1]))

    return sample


class Run:
    def __init__(self, cfg, workdir: pathlib.Path):
        self.cfg, self.workdir = cfg, workdir
        self.records: list[dict] = []

    def record(self, system: str, seed: int, **fields) -> None:
        rec = {"system": system, "seed": seed, **fields}
        self.records.append(rec)
        append_metrics(self.workdir, {"phase": "system", **rec})
        with open(self.workdir / "systems.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    d, s = cfg.data, cfg.search
    (workdir / "systems.jsonl").unlink(missing_ok=True)
    data = load_collection(cfg)
    run = Run(cfg, workdir)
    test_qrels = data.qrels["test"]
    write_json(workdir / "collection.json", {
        "name": data.name, "documents": len(data.docs),
        "queries": {k: len(v) for k, v in data.queries.items()}})  # fmt: skip

    t = time.perf_counter()
    bm = BM25.build(data.docs)
    bm_s = time.perf_counter() - t
    res = evaluate(lambda i: top_k(bm.scores(data.queries["test"][i]), s.depth), test_qrels)
    run.record("bm25", -1, index_bytes=bm.nbytes(), index_s=bm_s, **res)

    t = time.perf_counter()
    docs = TokenEncoder(d.doc_max_tokens)(data.docs, "encode documents")
    encoding_s = time.perf_counter() - t
    q_enc = TokenEncoder(d.query_max_tokens)
    queries = {k: q_enc(v, f"encode {k} queries") for k, v in data.queries.items() if v}
    res = evaluate(lambda i: top_k(docs.pooled @ queries["test"].pooled[i], s.depth), test_qrels)
    run.record("single_vector", -1, index_bytes=docs.pooled.nbytes, encoding_s=encoding_s,
               **res)  # fmt: skip

    # (train query, its most relevant document): the projection's and InfoNCE's positives
    pairs = np.array([[i, max(r, key=r.get)] for i, r in enumerate(data.qrels["train"])], np.int64)
    for seed in cfg.seeds:
        _run_seed(run, cfg, seed, docs, queries, pairs, encoding_s, test_qrels,
                  data.qrels.get("validation", []))  # fmt: skip
    return _means(run.records)


def _run_seed(run, cfg, seed, docs, queries, pairs, encoding_s, test_qrels, val_qrels) -> None:
    s, sc = cfg.search, cfg.sae
    t = time.perf_counter()
    proj, losses = train_projection(queries["train"].tokens, docs.tokens, pairs, cfg.projection,
                                    seed)  # fmt: skip
    proj_s = time.perf_counter() - t
    t = time.perf_counter()
    pd = TokenCollection(proj.apply_numpy(docs.tokens.vectors), docs.tokens.offsets)
    project_s = time.perf_counter() - t
    pq = {k: TokenCollection(proj.apply_numpy(v.tokens.vectors), v.tokens.offsets)
          for k, v in queries.items()}  # fmt: skip
    cls_d, cls_q = proj.apply_numpy(docs.pooled), {k: proj.apply_numpy(v.pooled)
                                                   for k, v in queries.items()}  # fmt: skip
    write_json(run.workdir / f"projection_seed{seed}.json", {"loss": losses, "train_s": proj_s})
    enc_s = encoding_s + project_s
    test = pq["test"]

    res = evaluate(lambda i: top_k(maxsim_dense(test.vectors[_rows(test, i)], pd), s.depth),
                   test_qrels)  # fmt: skip
    run.record("maxsim", seed, index_bytes=pd.vectors.nbytes, encoding_s=enc_s, **res)

    for k in s.kmeans:
        plaid = PlaidIndex.build(pd, k, s.residual_bits, seed, s.kmeans_iters)
        res = evaluate(lambda i, p=plaid: p.search(test.vectors[_rows(test, i)], s.depth,
                                                   s.nprobe, s.rerank), test_qrels)  # fmt: skip
        run.record(f"plaid_k{k}", seed, index_bytes=plaid.nbytes(), encoding_s=enc_s,
                   **plaid.timings, **res)  # fmt: skip

    variants = [(k, "rec") for k in sc.ks] + ([(sc.contrastive_k, "rec+nce")]
                                              if sc.contrastive_k else [])  # fmt: skip
    sampler = _pair_sampler(pq["train"], pd, pairs, sc.contrastive_pairs)
    for k, objective in tqdm(variants, desc=f"SAEs seed {seed}", leave=False):
        _sae_systems(run, cfg, seed, k, objective, pd, pq, (cls_d, cls_q), sampler, enc_s,
                     test_qrels, val_qrels)  # fmt: skip


def _sae_systems(run, cfg, seed, k, objective, pd, pq, cls, sampler, enc_s, test_qrels,
                 val_qrels) -> None:  # fmt: skip
    """Train one SAE, build its index, and record SSR-tok, its pruned variants and SSR-CLS."""
    s, sc = cfg.search, cfg.sae
    cls_d, cls_q = cls
    sae = TopKSAE(pd.vectors.shape[1], sc.width, k, rngs=nnx.Rngs(seed))
    t = time.perf_counter()
    stats = train_sae(sae, pd.vectors, sc, seed, pairs=sampler if objective == "rec+nce" else None,
                      weight=sc.contrastive_weight)  # fmt: skip
    train_s = time.perf_counter() - t
    sparse_codes(sae, pd.vectors[:8])  # compile outside the timed coding
    t = time.perf_counter()
    codes = sparse_codes(sae, pd.vectors)
    coding_s = time.perf_counter() - t
    t = time.perf_counter()
    index = InvertedIndex.build(TokenCollection(codes, pd.offsets), sparse_codes(sae, cls_d))
    index_s = time.perf_counter() - t
    zq = {k2: sparse_codes(sae, v.vectors) for k2, v in pq.items() if k2 != "train"}
    zq_cls = {k2: sparse_codes(sae, cls_q[k2]) for k2 in zq}
    name = f"ssr_k{k}" + ("_nce" if objective == "rec+nce" else "")
    common = dict(k=k, objective=objective, index_bytes=index.nbytes(), encoding_s=enc_s,
                  sae_coding_s=coding_s, index_s=index_s, sae_train_s=train_s, **stats)  # fmt: skip

    def search(i, split="test", prune=None, w=0.0):
        q = zq[split][_rows(pq[split], i)]
        return index.search(q, s.depth, prune=prune, query_cls=zq_cls[split][i], cls_weight=w)

    run.record(name, seed, **common, **evaluate(search, test_qrels))
    if objective != "rec":
        return
    for c in s.prune:
        run.record(f"{name}_C{c}", seed, prune=c, **common,
                   **evaluate(lambda i, c=c: search(i, prune=c), test_qrels))  # fmt: skip
    if val_qrels:
        val = _tune_cls_weight(index, zq["validation"], pq["validation"].offsets,
                               zq_cls["validation"], val_qrels, s)  # fmt: skip
        w = max(val, key=lambda x: (val[x], -x))
        run.record(f"{name}_cls", seed, cls_weight=w, val_ndcg=val, **common,
                   **evaluate(lambda i: search(i, w=w), test_qrels))  # fmt: skip


def _tune_cls_weight(index, codes, offsets, cls_codes, qrels, s) -> dict[float, float]:
    """Validation nDCG@10 of SSR-CLS for every weight w: the exhaustive token and [CLS] scores
    are computed once per query and combined per w (what search(w=w) ranks, without 5 passes)."""
    ranked: dict[float, list] = {w: [] for w in s.cls_weights}
    for i in range(len(qrels)):
        tok = index.scores(codes[offsets[i] : offsets[i + 1]])
        cls = index.cls_scores(cls_codes[i])
        for w in s.cls_weights:
            ranked[w].append(top_k(tok + w * cls, s.depth))
    return {w: retrieval_metrics(r, qrels)["ndcg@10"] for w, r in ranked.items()}


def _means(records: list[dict]) -> dict[str, float]:
    out: dict[str, list[float]] = {}
    for r in records:
        for m in METRICS:
            if m in r:
                out.setdefault(f"{r['system']}/{m}", []).append(float(r[m]))
    return {k: float(np.mean(v)) for k, v in out.items()}
