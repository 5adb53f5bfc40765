"""The K-means baseline, PLAID-like (Santhanam et al. 2022), on the same 128-d token vectors.

Reconstruction of PLAID's pipeline at this scale (no official code is used):
  index   k-means centroids on the document tokens; each token = its nearest centroid id plus its
          residual quantized to `bits` per dimension (bucket cut-offs at the residuals' quantiles,
          bucket values their means); centroid -> documents inverted lists.
  search  each query token probes its `nprobe` best centroids; their documents are candidates;
          candidates are ranked by centroid interaction Σ_i max_{j ∈ D} ⟨q_i, c(j)⟩, the best
          `rerank` are scored by MaxSim on the decompressed vectors (centroid + residual).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from projects.ssr.late_interaction import TokenCollection, maxsim_dense, token_rows, top_k
from shared.kmeans import kmeans, nearest


@dataclasses.dataclass
class PlaidIndex:
    centres: np.ndarray  # [K, d] float32
    codes: np.ndarray  # [T] centroid of every token
    residual_bits: np.ndarray  # [T, d] uint8 bucket ids (stored packed: see nbytes)
    bucket_values: np.ndarray  # [2**bits] float32
    lists: sp.csr_matrix  # [K, n_docs] centroid -> documents
    offsets: np.ndarray
    bits: int
    timings: dict[str, float]

    @classmethod
    def build(
        cls, tokens: TokenCollection, k: int, bits: int = 2, seed: int = 0, iters: int = 10
    ) -> PlaidIndex:
        x = tokens.vectors
        t0 = time.perf_counter()
        centres = kmeans(x, k, seed=seed, iters=iters)
        codes = nearest(x, centres)
        t1 = time.perf_counter()
        resid = x - centres[codes]
        cuts = np.quantile(resid, np.arange(1, 2**bits) / 2**bits)
        buckets = np.searchsorted(cuts, resid).astype(np.uint8)
        values = np.array([resid[buckets == b].mean() if (buckets == b).any() else 0.0
                           for b in range(2**bits)], np.float32)  # fmt: skip
        token_doc = tokens.token_doc
        lists = sp.csr_matrix(
            (np.ones(len(codes), bool), (codes, token_doc)), shape=(k, len(tokens))
        )
        lists.sum_duplicates()
        t2 = time.perf_counter()
        return cls(centres, codes, buckets, values, lists, np.asarray(tokens.offsets), bits,
                   {"clustering_s": t1 - t0, "residual_coding_s": t2 - t1})  # fmt: skip

    def nbytes(self) -> int:
        t, d = self.residual_bits.shape
        code_bytes = 2 if len(self.centres) <= 65536 else 4
        lists = self.lists.indices.nbytes + self.lists.indptr.nbytes
        return int(self.centres.nbytes + t * code_bytes + (t * d * self.bits + 7) // 8 + lists)

    def decompress(self, docs: np.ndarray) -> TokenCollection:
        rows = token_rows(self.offsets, docs)
        v = self.centres[self.codes[rows]] + self.bucket_values[self.residual_bits[rows]]
        lengths = np.diff(self.offsets)[docs]
        return TokenCollection(v, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))

    def search(self, query: np.ndarray, k: int, nprobe: int = 2, rerank: int = 256) -> np.ndarray:
        cs = query @ self.centres.T  # [m, K]
        probe = np.unique(np.argpartition(-cs, nprobe - 1, axis=1)[:, :nprobe])
        cand = np.unique(self.lists[probe].indices)
        rows = token_rows(self.offsets, cand)
        lengths = np.diff(self.offsets)[cand]
        approx = np.maximum.reduceat(cs[:, self.codes[rows]].T,
                                     np.r_[0, np.cumsum(lengths)[:-1]], axis=0).sum(1)  # fmt: skip
        best = np.sort(top_k(approx, rerank, cand))
        return top_k(maxsim_dense(query, self.decompress(best)), k, best)
