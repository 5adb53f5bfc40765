"""The SSR index: neuron-level inverted lists over non-negative sparse token codes.

Reconstruction (not confirmed by the paper, ../papers/ssr.md section 2), exact by construction:
  S(q, D)  = Σ_i max_{j ∈ D} ⟨z_i, z_j⟩ over the codes, computed only from the postings of the
             neurons active in each query token: a document token sharing no neuron with z_i
             scores 0, which is its dot product, so the sum equals dense MaxSim on the codes.
  UB(q, D) = Σ_i Σ_{u ∈ active(i)} z_i[u] · max_{j ∈ D} z_j[u] ≥ S(q, D) (codes ≥ 0); pruning keeps
             the top C documents by UB (one sparse mat-vec over per-document neuron maxima) and
             scores only them exactly.
  SSR-CLS  S'(q, D) = S(q, D) + w · ⟨z_cls(q), z_cls(D)⟩.
Postings live in a CSR matrix [width, T] (row u = neuron u's list of (token, value)); a query
walks only the lists of its active neurons: a sparse product and a scatter-max per document when
the lists are short, dense per-token sums (np.bincount) and one max per document's token run
(np.maximum.reduceat) when they are long.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp

from projects.ssr.late_interaction import TokenCollection, token_rows, top_k


def _csr(codes) -> sp.csr_matrix:
    m = sp.csr_matrix(codes, dtype=np.float32)
    m.eliminate_zeros()
    if m.nnz and m.data.min() < 0:
        raise ValueError("SSR codes must be non-negative (ReLU after TopK); found negative values")
    return m


def _sum_of_maxima(query_token, doc, values, m: int, n: int) -> np.ndarray:
    """Σ_i max over the hits (query token i, document, value) of each document -> [n]; a document
    without a hit for token i adds 0 (the codes' dot products are >= 0)."""
    best = np.zeros(m * n, np.float32)
    np.maximum.at(best, np.asarray(query_token, np.int64) * n + doc, values)
    return best.reshape(m, n).sum(0, dtype=np.float64)


@dataclasses.dataclass
class InvertedIndex:
    postings: sp.csr_matrix  # [width, T]: neuron -> (token row, value)
    forward: sp.csr_matrix  # [T, width]: token -> its code (exact rescoring of pruned candidates)
    token_doc: np.ndarray  # [T] document of every token
    doc_max: sp.csr_matrix  # [n_docs, width]: per-document per-neuron maxima (for UB)
    offsets: np.ndarray  # [n_docs + 1]
    cls: sp.csr_matrix | None = None  # [n_docs, width] document [CLS] codes (SSR-CLS)

    @classmethod
    def build(cls, codes: TokenCollection, cls_codes=None) -> InvertedIndex:
        """codes.vectors: [T, width] non-negative codes (dense or sparse)."""
        z = _csr(codes.vectors)
        token_doc = codes.token_doc
        coo = z.tocoo()
        width = z.shape[1]
        # per (document, neuron) maximum: sort the entries by key, reduce each run
        key = token_doc[coo.row].astype(np.int64) * width + coo.col
        order = np.argsort(key, kind="stable")
        key, vals = key[order], coo.data[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        maxima = np.maximum.reduceat(vals, starts) if len(vals) else vals
        doc_max = sp.csr_matrix(
            (maxima, (key[starts] // width, key[starts] % width)), shape=(len(codes), width)
        )
        return cls(
            postings=z.T.tocsr(),
            forward=z,
            token_doc=token_doc,
            doc_max=doc_max,
            offsets=np.asarray(codes.offsets),
            cls=None if cls_codes is None else _csr(cls_codes),
        )

    @property
    def num_docs(self) -> int:
        return len(self.offsets) - 1

    def nbytes(self) -> int:
        """Bytes of the postings (values, token ids, list offsets), the forward codes and the
        pruning maxima (one index serves every SSR variant)."""
        mats = [self.postings, self.forward, self.doc_max] + ([self.cls] if self.cls is not None
                                                               else [])  # fmt: skip
        return int(sum(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes for m in mats))

    def scores(self, query, docs: np.ndarray | None = None) -> np.ndarray:
        """Exact sparse MaxSim of query codes [m, width] -> [n_docs] (or [len(docs)] for the
        given document ids: only their token postings are read)."""
        zq = _csr(query)
        if docs is None:
            return self._scores_all(zq)
        # few candidates: read their tokens' codes from the forward index
        n = len(docs)
        rows = token_rows(self.offsets, docs)
        token_doc = np.repeat(np.arange(n), np.diff(self.offsets)[docs])
        hits = (self.forward[rows] @ zq.T).tocoo()  # [rows, m]
        return _sum_of_maxima(hits.col, token_doc[hits.row], hits.data, zq.shape[0], n)

    def _scores_all(self, zq: sp.csr_matrix) -> np.ndarray:
        """Every document's exact score by the cheaper of two equal computations: with few
        postings to walk (under 1/20 of query tokens x collection tokens, the crossover measured
        on 256k-token indexes) a sparse product and a scatter-max, else dense per-token sums."""
        walked = np.diff(self.postings.indptr)[zq.indices].sum()
        if 20 * walked < zq.shape[0] * self.postings.shape[1]:
            return self._scores_sparse(zq)
        return self._scores_dense(zq)

    def _scores_sparse(self, zq: sp.csr_matrix) -> np.ndarray:
        hits = (zq @ self.postings).tocoo()  # [m, T]: ⟨z_i, z_j⟩ of overlapping tokens only
        return _sum_of_maxima(hits.row, self.token_doc[hits.col], hits.data, zq.shape[0],
                              self.num_docs)  # fmt: skip

    def _scores_dense(self, zq: sp.csr_matrix) -> np.ndarray:
        """Per query token: add up the postings of its active neurons into one dense row over the
        tokens (np.bincount: ⟨z_i, z_j⟩ for every token j, 0 where nothing overlaps), then take
        each document's maximum over its contiguous token run (every document has a token)."""
        post, n_tokens = self.postings, self.postings.shape[1]
        out = np.zeros(self.num_docs)
        for i in range(zq.shape[0]):
            active = slice(zq.indptr[i], zq.indptr[i + 1])
            neurons, values = zq.indices[active], zq.data[active]
            lengths = np.diff(post.indptr)[neurons]
            at = token_rows(post.indptr, neurons)  # positions of those postings, list by list
            dots = np.bincount(post.indices[at], np.repeat(values, lengths) * post.data[at],
                               minlength=n_tokens)  # fmt: skip
            out += np.maximum.reduceat(dots, self.offsets[:-1])
        return out

    def upper_bounds(self, query) -> np.ndarray:
        """UB(q, D) for every document [n_docs]."""
        zsum = np.asarray(_csr(query).sum(0)).ravel()
        return self.doc_max @ zsum.astype(np.float64)

    def cls_scores(self, query_cls) -> np.ndarray:
        if self.cls is None:
            raise ValueError("this index was built without [CLS] codes (InvertedIndex.build)")
        return np.asarray(self.cls @ _csr(query_cls).T.toarray()).ravel().astype(np.float64)

    def search(
        self, query, k: int, prune: int | None = None, query_cls=None, cls_weight: float = 0.0
    ) -> np.ndarray:
        """The k best document ids: exact MaxSim over all documents, or over the `prune` best by
        UB; SSR-CLS adds cls_weight · ⟨z_cls(q), z_cls(D)⟩."""
        docs = None
        extra = cls_weight * self.cls_scores(query_cls) if cls_weight else 0.0  # [n_docs] or 0
        if prune is not None:
            docs = np.sort(top_k(self.upper_bounds(query) + extra, prune))  # still an upper bound
        s = self.scores(query, docs)
        if cls_weight:
            s = s + (extra if docs is None else extra[docs])
        return top_k(s, k, docs)
