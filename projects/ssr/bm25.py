"""BM25 (Okapi, Lucene's idf) in NumPy/SciPy: a sparse document x term matrix of term weights.

  score(q, D) = Σ_{t ∈ set(q)} idf(t) · tf(t, D) (k1 + 1) / (tf(t, D) + k1 (1 − b + b |D| / avgdl))
  idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
Terms: lower-cased runs of letters and digits (no stemming, no stop words). k1 = 1.2, b = 0.75
(Elasticsearch's defaults, BEIR's BM25 baseline).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

_WORD = re.compile(r"[^\W_]+")


def terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclasses.dataclass
class BM25:
    vocab: dict[str, int]
    weights: sp.csc_matrix  # [n_docs, n_terms]: idf · saturated tf

    @classmethod
    def build(cls, docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> BM25:
        vocab: dict[str, int] = {}
        rows, cols = [], []
        for i, text in enumerate(docs):
            for t in terms(text):
                rows.append(i)
                cols.append(vocab.setdefault(t, len(vocab)))
        tf = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(docs), len(vocab)))
        tf.sum_duplicates()
        dl = np.asarray(tf.sum(1)).ravel()
        df = np.diff(tf.tocsc().indptr)
        idf = np.log1p((len(docs) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * dl / max(dl.mean(), 1e-12))
        tf = tf.tocoo()
        w = idf[tf.col] * tf.data * (k1 + 1) / (tf.data + norm[tf.row])
        return cls(vocab, sp.csc_matrix((w, (tf.row, tf.col)), shape=tf.shape))

    def scores(self, query: str) -> np.ndarray:
        ids = sorted({self.vocab[t] for t in terms(query) if t in self.vocab})
        return np.asarray(self.weights[:, ids].sum(1)).ravel()

    def nbytes(self) -> int:
        w = self.weights
        return int(w.data.nbytes + w.indices.nbytes + w.indptr.nbytes)
