"""SSR's index build time and query latency against exhaustive MaxSim and the PLAID-like K-means
index, all measured in this run on the same token vectors.

    flock /tmp/bench.lock python launch/benchmark_ssr.py [--docs 2000] [--queries 100]
        [--k 16] [--centroids 1024] [--rounds 5] [--write]

Wikipedia leads (the cpu config's collection), frozen MiniLM tokens, the cpu config's projection
and one TopK SAE trained once (seed 0; training is not timed). Then --rounds alternating rounds
of: building each index (SSR: SAE coding + inverted lists; K-means: clustering + residual
coding; MaxSim: nothing to build beyond the vectors) and searching --queries test queries one by
one (top-100). Medians over the rounds whose share of other processes' CPU stayed low (helpers of
benchmark_smollm2.py); ratios are against this run's MaxSim and K-means. --write also stores
the report with the command, revision and device in projects/ssr/results/benchmark.md (the
README quotes it).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from benchmark_smollm2 import alternate, summary  # noqa: E402
from flax import nnx  # noqa: E402

from projects.ssr.experiment import CONFIGS  # noqa: E402
from projects.ssr.inverted_index import InvertedIndex  # noqa: E402
from projects.ssr.late_interaction import TokenCollection, maxsim_dense, top_k  # noqa: E402
from projects.ssr.pipeline import load_collection  # noqa: E402
from projects.ssr.plaid import PlaidIndex  # noqa: E402
from projects.ssr.projection import train_projection  # noqa: E402
from projects.ssr.sae import TopKSAE, sparse_codes  # noqa: E402
from projects.ssr.sae_train import train_sae  # noqa: E402
from projects.ssr.token_encoder import TokenEncoder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--centroids", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="store the report in results/")
    args = parser.parse_args()
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text)
        lines.append(text)

    cfg = CONFIGS["cpu"]
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(
        cfg.data, max_docs=args.docs, test_queries=args.queries, validation_queries=1,
        train_queries=min(cfg.data.train_queries, args.docs // 2)))  # fmt: skip
    data = load_collection(cfg)
    docs = TokenEncoder(cfg.data.doc_max_tokens)(data.docs)
    enc = TokenEncoder(cfg.data.query_max_tokens)
    train_q, test_q = enc(data.queries["train"]).tokens, enc(data.queries["test"]).tokens
    pairs = np.array([[i, max(r, key=r.get)] for i, r in enumerate(data.qrels["train"])])
    proj, _ = train_projection(train_q, docs.tokens, pairs, cfg.projection, seed=0)
    pd = TokenCollection(proj.apply_numpy(docs.tokens.vectors), docs.tokens.offsets)
    pq = TokenCollection(proj.apply_numpy(test_q.vectors), test_q.offsets)
    sae = TopKSAE(pd.vectors.shape[1], cfg.sae.width, args.k, rngs=nnx.Rngs(0))
    train_sae(sae, pd.vectors, cfg.sae, seed=0)
    n_q = len(data.qrels["test"])
    say(
        f"{len(data.docs)} documents, {pd.vectors.shape[0]} tokens, {n_q} queries; "
        f"SAE width {cfg.sae.width}, k = {args.k}; K-means {args.centroids}"
    )

    built: dict = {}

    def build_ssr():
        codes = sparse_codes(sae, pd.vectors)
        built["ssr"] = InvertedIndex.build(TokenCollection(codes, pd.offsets))

    def build_kmeans():
        built["kmeans"] = PlaidIndex.build(pd, args.centroids, cfg.search.residual_bits, 0,
                                           cfg.search.kmeans_iters)  # fmt: skip

    def build_maxsim():
        built["maxsim"] = np.ascontiguousarray(pd.vectors)

    builds = alternate({"MaxSim": build_maxsim, "K-means": build_kmeans, "SSR": build_ssr},
                       args.rounds)  # fmt: skip
    zq = sparse_codes(sae, pq.vectors)
    rows = [slice(int(pq.offsets[i]), int(pq.offsets[i + 1])) for i in range(len(pq))]
    depth, s = cfg.search.depth, cfg.search

    def searches(fn):
        return lambda: [fn(r) for r in rows]

    queries = alternate({
        "MaxSim": searches(lambda r: top_k(maxsim_dense(pq.vectors[r], pd), depth)),
        "K-means": searches(lambda r: built["kmeans"].search(pq.vectors[r], depth, s.nprobe,
                                                             s.rerank)),
        "SSR": searches(lambda r: built["ssr"].search(zq[r], depth)),
        "SSR, C = 100": searches(lambda r: built["ssr"].search(zq[r], depth, prune=100)),
    }, args.rounds)  # fmt: skip
    say("\nindex build (s, median of clean rounds)")
    base = {n: summary(c)[0] for n, c in builds.items()}
    for name, calls in builds.items():
        med, clean = summary(calls)
        say(f"  {name:14s} {med:9.3f}  clean {clean}  vs K-means {med / base['K-means']:.3f}x")
    say(f"\nquery latency (ms per query over {len(rows)} queries, median of clean rounds)")
    base = {n: summary(c)[0] for n, c in queries.items()}
    for name, calls in queries.items():
        med, clean = summary(calls)
        say(
            f"  {name:14s} {1e3 * med / len(rows):9.3f}  clean {clean}  vs MaxSim "
            f"{med / base['MaxSim']:.3f}x  vs K-means {med / base['K-means']:.3f}x"
        )
    if args.write:
        _write(lines, args)


def _write(lines: list[str], args) -> None:
    from shared.provenance import git_revision
    from shared.results import device_summary

    command = "python launch/benchmark_ssr.py " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items() if k != "write"
    )
    out = Path(__file__).resolve().parents[1] / "projects" / "ssr" / "results" / "benchmark.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        "# SSR benchmark: index build time and query latency, same run\n\n```\n"
        + "\n".join(lines).strip()
        + f"\n```\n\n_Generated by `{command}` at revision {git_revision()}; device "
        f"{device_summary()}, {os.cpu_count()} CPU cores._\n"
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
