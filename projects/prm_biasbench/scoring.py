"""Step scores of a trained PRM for many (question, solution) pairs, batched and jitted.

r_k = sigmoid(step logit at the k-th tag); trajectory scores r_last = r_K and r_min = min_k r_k
(spec §2, Reconstruction there).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import numpy as np
from flax import nnx

from projects.prm_biasbench.prm_models import gather_steps
from projects.prm_biasbench.processors import Encoded, Processor, collate


@functools.partial(jax.jit, static_argnums=0)
def _step_logits(graphdef: nnx.GraphDef, state: nnx.State, batch: dict) -> jax.Array:
    return gather_steps(nnx.merge(graphdef, state)(batch), batch["ends"])


class Scorer:
    """A PRM frozen for evaluation: `scorer(pairs)` -> one array of step scores per pair.

    The parameters are captured when it is built (split once); batches are sorted by length,
    their rows padded to a power of two and widths to processors.BUCKET, so the forward compiles
    for few shapes; padding never changes a score (causal / masked attention)."""

    def __init__(self, model: nnx.Module, processor: Processor, batch_size: int = 64):
        if batch_size < 1:
            raise ValueError(f"batch_size={batch_size} must be at least 1")
        self.graphdef, self.state = nnx.split(model)
        self.processor, self.batch_size = processor, batch_size

    def model(self) -> nnx.Module:
        return nnx.merge(self.graphdef, self.state)

    def encode(self, pairs: Sequence[tuple[str, str]]) -> list[Encoded]:
        return [self.processor.encode(q, s) for q, s in pairs]

    def logits(self, rows: Sequence[Encoded]) -> list[np.ndarray]:
        """Step logits [K_i] of every encoded row."""
        out: list[np.ndarray | None] = [None] * len(rows)
        order = np.argsort([len(r.ids) for r in rows], kind="stable")
        for start in range(0, len(rows), self.batch_size):
            idx = order[start : start + self.batch_size]
            n = min(self.batch_size, 1 << (len(idx) - 1).bit_length())
            batch_rows = [rows[i] for i in idx] + [rows[idx[0]]] * (n - len(idx))
            batch = collate(batch_rows, self.processor.pad_id)
            logits = np.asarray(_step_logits(self.graphdef, self.state, batch), np.float64)
            for j, i in enumerate(idx):
                out[i] = logits[j, : len(rows[i].ends)]
        return out

    def __call__(self, pairs: Sequence[tuple[str, str]]) -> list[np.ndarray]:
        """Step scores r_1..r_K in (0, 1) (float64) of every (question, solution)."""
        return [1.0 / (1.0 + np.exp(-z)) for z in self.logits(self.encode(pairs))]


def r_last(scores: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([s[-1] for s in scores], np.float64)


def r_min(scores: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([s.min() for s in scores], np.float64)
