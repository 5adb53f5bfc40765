"""Late interaction (ColBERT MaxSim) over a collection of token-embedded documents.

S(q, D) = Σ_{i ∈ q} max_{j ∈ D} ⟨q_i, d_j⟩. A collection stores every document's token vectors
back to back ([T, d]) with offsets ([n_docs + 1]); every document has at least one token.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class TokenCollection:
    """Token vectors of documents: rows offsets[i]:offsets[i + 1] of `vectors` are document i's."""

    vectors: np.ndarray  # [T, d] (dense) or a scipy.sparse matrix [T, width] (codes)
    offsets: np.ndarray  # [n_docs + 1] int64, offsets[0] = 0, strictly increasing

    def __post_init__(self):
        o = np.asarray(self.offsets)
        if o.ndim != 1 or len(o) < 2 or o[0] != 0 or o[-1] != self.vectors.shape[0]:
            raise ValueError(
                f"offsets must run from 0 to the {self.vectors.shape[0]} token rows; got "
                f"{o[:3]}...{o[-3:]}"
            )
        if (np.diff(o) <= 0).any():
            raise ValueError("every document needs at least one token (offsets must increase)")

    @classmethod
    def from_list(cls, docs: list[np.ndarray]) -> TokenCollection:
        lengths = [len(d) for d in docs]
        return cls(np.concatenate(docs), np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def token_doc(self) -> np.ndarray:
        """[T] the document of every token row."""
        return np.repeat(np.arange(len(self)), np.diff(self.offsets))

    def doc_tokens(self, i: int):
        return self.vectors[self.offsets[i] : self.offsets[i + 1]]


def token_rows(offsets: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """The token rows of documents `docs`, document after document (vectorized ranges)."""
    lengths = np.diff(offsets)[docs]
    starts = np.repeat(offsets[docs] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return starts + np.arange(int(lengths.sum()))


def maxsim_dense(query: np.ndarray, docs: TokenCollection) -> np.ndarray:
    """Exhaustive MaxSim of one query [m, d] against every document -> [n_docs] (float64 sums of
    float32 dots)."""
    sims = np.asarray(docs.vectors @ query.T)  # [T, m]
    per_doc = np.maximum.reduceat(sims, docs.offsets[:-1], axis=0)  # [n_docs, m]
    return per_doc.sum(1, dtype=np.float64)


def top_k(scores: np.ndarray, k: int, ids: np.ndarray | None = None) -> np.ndarray:
    """The ids of the k best scores, best first (ties: the lower id first)."""
    ids = np.arange(len(scores)) if ids is None else np.asarray(ids)
    k = min(k, len(scores))
    if k == 0:
        return ids[:0]
    kth = -np.partition(-scores, k - 1)[k - 1]
    part = np.flatnonzero(scores >= kth)  # every tie at the boundary, so the cut is by id
    order = np.lexsort((ids[part], -scores[part]))[:k]
    return ids[part[order]]
