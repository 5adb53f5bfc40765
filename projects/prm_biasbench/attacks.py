"""Tier 2: adversarial suffixes that raise r_last of invalid solutions (spec §2, Reconstruction).

`m` tokens are inserted at the end of the last step (the answer chunk), before its step tag, so
the PRM still scores the same number of steps. Both attacks maximize the last step's logit
(monotone in r_last = sigmoid(logit), without sigmoid saturation in the gradient).
- GCG (discrete): the gradient of the logit with respect to the one-hot suffix gives, per
  position, the top-k tokens; B candidates each replace one random position with one of its
  top-k; the best candidate replaces the current suffix if it scores higher. The current suffix
  is therefore the best so far (Reconstruction: the GCG paper moves to the best candidate even
  when it is worse; keeping the better one makes the attack monotone).
- Continuous: Adam on the m input embedding vectors themselves, started from the GCG optimum, the
  best iterate kept: an upper bound on any discrete suffix (spec: "optimize the m input
  embeddings directly (upper bound)").
Suffix tokens are drawn from `allowed` ids only (no special tokens, no step separators).
All rows of a batch are attacked together; randomness is a numpy Generator per call.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.prm_biasbench.processors import Encoded, collate


def with_suffix(row: Encoded, suffix: np.ndarray) -> tuple[Encoded, np.ndarray]:
    """`row` with `suffix` [m] inserted before the last step tag -> (row, suffix positions)."""
    e, m = int(row.ends[-1]), len(suffix)
    ids = np.concatenate([row.ids[:e], suffix.astype(np.int32), row.ids[e:]])
    blocks = np.concatenate([row.blocks[:e], np.full(m, row.blocks[e]), row.blocks[e:]])
    types = np.concatenate([row.types[:e], np.full(m, row.types[e]), row.types[e:]])
    ends = row.ends.copy()
    ends[-1] += m
    return Encoded(ids, blocks.astype(np.int32), types.astype(np.int32), ends), np.arange(e, e + m)


@dataclasses.dataclass
class SuffixBatch:
    """N invalid solutions with m-token suffixes, collated to one width."""

    batch: dict[str, np.ndarray]  # processors.collate output, suffix included
    positions: np.ndarray  # [N, m] suffix positions
    last: np.ndarray  # [N] position of the last step tag

    def with_ids(self, suffixes: np.ndarray) -> dict[str, np.ndarray]:
        """suffixes [N, m] or [N, C, m] -> the batch (rows repeated C times) with them in."""
        s = suffixes if suffixes.ndim == 3 else suffixes[:, None]
        n, c, _ = s.shape
        out = {k: np.repeat(v, c, axis=0) for k, v in self.batch.items()}
        rows = np.arange(n * c)[:, None]  # row i * c + j holds candidate j of solution i
        out["ids"][rows, np.repeat(self.positions, c, axis=0)] = s.reshape(n * c, -1)
        out["last"] = np.repeat(self.last, c)
        return out


def suffix_batch(rows: list[Encoded], init: np.ndarray, pad_id: int) -> SuffixBatch:
    """Each row with its initial suffix `init` [N, m], collated."""
    built = [with_suffix(r, s) for r, s in zip(rows, init)]
    batch = collate([b for b, _ in built], pad_id)
    last = np.array([b.ends[-1] for b, _ in built], np.int32)
    return SuffixBatch(batch, np.stack([p for _, p in built]), last)


def _last_logit(model, batch, word_vectors=None):
    logits = model(batch, word_vectors)
    return jnp.take_along_axis(logits, batch["last"][:, None], axis=1)[:, 0]


@functools.partial(jax.jit, static_argnums=0)
def last_logits(graphdef, state, batch) -> jax.Array:
    """[R] logit of the last step of every row."""
    return _last_logit(nnx.merge(graphdef, state), batch)


@functools.partial(jax.jit, static_argnums=0)
def onehot_gradient(graphdef, state, batch, positions) -> jax.Array:
    """d(last logit)/d(one-hot suffix) [N, m, V]: the embedding gradient times the table."""
    model = nnx.merge(graphdef, state)
    table = model.word_table()
    base = table[batch["ids"]]
    rows = jnp.arange(positions.shape[0])[:, None]

    def objective(suffix_vectors):
        vectors = base.at[rows, positions].set(suffix_vectors)
        return jnp.sum(_last_logit(model, batch, vectors))

    grad = jax.grad(objective)(base[rows, positions])
    return jnp.einsum("NMD,VD->NMV", grad, table)


def evaluate(graphdef, state, sb: SuffixBatch, suffixes: np.ndarray, chunk: int) -> np.ndarray:
    """Last-step logits of candidate suffixes [N, C, m] -> [N, C], `chunk` rows per forward."""
    n, c, _ = suffixes.shape
    batch = sb.with_ids(suffixes)
    out = []
    for i in range(0, n * c, chunk):
        part = {k: v[i : i + chunk] for k, v in batch.items()}
        pad = chunk - len(part["ids"])
        if pad:  # a fixed row count keeps one compiled shape
            part = {k: np.concatenate([v, np.repeat(v[-1:], pad, 0)]) for k, v in part.items()}
        out.append(np.asarray(last_logits(graphdef, state, part))[: chunk - pad])
    return np.concatenate(out).reshape(n, c).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class GCGResult:
    suffix: np.ndarray  # [N, m] the best suffix found
    logit: np.ndarray  # [N] its last-step logit
    trace: np.ndarray  # [iterations + 1, N] best-so-far logit after each iteration


def gcg(
    graphdef,
    state,
    sb: SuffixBatch,
    init: np.ndarray,
    allowed: np.ndarray,
    iterations: int,
    top_k: int,
    candidates: int,
    gen: np.random.Generator,
    chunk: int = 256,
    progress: Callable[[int, np.ndarray], None] | None = None,
) -> GCGResult:
    """GCG from suffixes `init` [N, m]; allowed [V] bool marks the tokens a suffix may use;
    `progress(iteration, best logits)` is called after every iteration."""
    suffix = init.copy()
    n, m = suffix.shape
    best = evaluate(graphdef, state, sb, suffix[:, None], chunk)[:, 0]
    trace = [best.copy()]
    blocked = jnp.asarray(~allowed)
    k = min(top_k, int(allowed.sum()))
    for _ in range(iterations):
        grad = onehot_gradient(graphdef, state, sb.with_ids(suffix), jnp.asarray(sb.positions))
        grad = jnp.where(blocked, -jnp.inf, grad)  # maximize: the largest gradient first
        top = np.asarray(jax.lax.top_k(grad, k)[1])  # [N, m, k]
        pos = gen.integers(m, size=(n, candidates))
        pick = gen.integers(k, size=(n, candidates))
        cand = np.repeat(suffix[:, None], candidates, axis=1)
        rows = np.arange(n)[:, None]
        cand[rows, np.arange(candidates)[None], pos] = top[rows, pos, pick]
        scores = evaluate(graphdef, state, sb, cand, chunk)
        j = scores.argmax(1)
        better = scores[np.arange(n), j] > best
        suffix[better] = cand[np.arange(n), j][better]
        best = np.where(better, scores[np.arange(n), j], best)
        trace.append(best.copy())
        if progress is not None:
            progress(len(trace) - 1, best)
    return GCGResult(suffix, best, np.stack(trace))


@functools.partial(jax.jit, static_argnums=(0, 4))
def _continuous_step(graphdef, state, batch, positions, tx, vectors, opt_state):
    model = nnx.merge(graphdef, state)
    base = model.word_table()[batch["ids"]]
    rows = jnp.arange(positions.shape[0])[:, None]

    def objective(v):
        logits = _last_logit(model, batch, base.at[rows, positions].set(v))
        return -jnp.sum(logits), logits

    (_, logits), grad = jax.value_and_grad(objective, has_aux=True)(vectors)
    updates, opt_state = tx.update(grad, opt_state, vectors)
    return optax.apply_updates(vectors, updates), opt_state, logits


def continuous(
    graphdef, state, sb: SuffixBatch, suffix: np.ndarray, steps: int, lr: float
) -> np.ndarray:
    """Best last-step logit [N] over `steps` Adam steps on the suffix embeddings, started from
    the embeddings of `suffix` [N, m] (so never below that suffix's logit)."""
    table = np.asarray(nnx.merge(graphdef, state).word_table())
    vectors = jnp.asarray(table[suffix])
    batch = sb.with_ids(suffix)
    tx = optax.adam(lr)
    opt_state = tx.init(vectors)
    positions = jnp.asarray(sb.positions)
    best = np.full(len(suffix), -np.inf)
    for _ in range(steps + 1):  # the last call only scores the last update
        vectors, opt_state, logits = _continuous_step(
            graphdef, state, batch, positions, tx, vectors, opt_state
        )
        best = np.maximum(best, np.asarray(logits, np.float64))
    return best


def hamming_samples(
    suffix: np.ndarray, distance: int, count: int, allowed_ids: np.ndarray, gen: np.random.Generator
) -> np.ndarray:
    """[N, count, m]: `suffix` with `distance` random positions changed to other allowed ids."""
    n, m = suffix.shape
    out = np.repeat(suffix[:, None], count, axis=1)
    for i in range(n):
        for c in range(count):
            for p in gen.choice(m, size=distance, replace=False):
                new = allowed_ids[gen.integers(len(allowed_ids))]
                while new == suffix[i, p]:
                    new = allowed_ids[gen.integers(len(allowed_ids))]
                out[i, c, p] = new
    return out
