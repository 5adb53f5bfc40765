"""The ColBERT-style head: a linear map of frozen MiniLM token vectors to 128-d, unit-normalized,
trained with MaxSim scores and in-batch InfoNCE on (query, relevant document) pairs.

  S(q, D) = Σ_i max_j ⟨P q_i, P d_j⟩ / (‖P q_i‖ ‖P d_j‖) ;  L = CE(S(q_b, D_c) over c, target b)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

from projects.ssr.late_interaction import TokenCollection


def padded(
    tokens: TokenCollection, rows: np.ndarray, multiple: int = 16
) -> tuple[np.ndarray, np.ndarray]:
    """Token vectors of documents `rows` as [n, L, d] with a validity mask [n, L]; L is rounded
    up to a multiple of `multiple` so that a jitted step compiles for few shapes."""
    lengths = np.diff(tokens.offsets)[rows]
    width = -(-int(lengths.max()) // multiple) * multiple
    out = np.zeros((len(rows), width, tokens.vectors.shape[1]), np.float32)
    mask = np.arange(width)[None, :] < lengths[:, None]
    for j, r in enumerate(rows):
        out[j, : lengths[j]] = tokens.doc_tokens(int(r))
    return out, mask


def _unit(x: jax.Array) -> jax.Array:
    # rsqrt of the clamped squared norm: finite gradients at the zero rows of padding
    return x * jax.lax.rsqrt(jnp.maximum(jnp.sum(x * x, axis=-1, keepdims=True), 1e-24))


def batch_maxsim(q, q_mask, d, d_mask) -> jax.Array:
    """[Bq, Lq, k], [Bd, Ld, k] (+ masks) -> MaxSim scores [Bq, Bd]."""
    sims = jnp.einsum("qik,djk->qdij", q, d)
    sims = jnp.where(d_mask[None, :, None, :], sims, -jnp.inf).max(-1)  # [Bq, Bd, Lq]
    return jnp.where(q_mask[:, None, :], sims, 0.0).sum(-1)


def info_nce(scores: jax.Array) -> jax.Array:
    """In-batch InfoNCE: row b's positive is column b."""
    return -jnp.mean(jnp.diagonal(jax.nn.log_softmax(scores, axis=-1)))


class Projection(nnx.Module):
    def __init__(self, in_dim: int, dim: int, *, rngs: nnx.Rngs):
        self.linear = nnx.Linear(in_dim, dim, use_bias=False, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return _unit(self.linear(x))

    def apply_numpy(self, x: np.ndarray, batch: int = 65536) -> np.ndarray:
        w = np.asarray(self.linear.kernel[...])
        out = np.concatenate([x[s : s + batch] @ w for s in range(0, len(x), batch)] or [x @ w])
        return (out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)).astype(
            np.float32
        )


def train_projection(
    queries: TokenCollection, docs: TokenCollection, pairs: np.ndarray, cfg, seed: int
) -> tuple[Projection, list[float]]:
    """pairs [n, 2]: (query row, relevant document row); cfg: dim, steps, batch_size, lr.
    Returns the head and its loss curve."""
    proj = Projection(queries.vectors.shape[1], cfg.dim, rngs=nnx.Rngs(seed))
    opt = nnx.Optimizer(proj, optax.adam(cfg.lr), wrt=nnx.Param)
    graphdef, state = nnx.split((proj, opt))

    @jax.jit
    def step(state, q, qm, d, dm):
        proj, opt = nnx.merge(graphdef, state)

        def loss_fn(p):
            return info_nce(batch_maxsim(p(q), qm, p(d), dm))

        loss, grads = nnx.value_and_grad(loss_fn)(proj)
        opt.update(proj, grads)
        return nnx.state((proj, opt)), loss

    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(cfg.steps):
        b = pairs[rng.choice(len(pairs), min(cfg.batch_size, len(pairs)), replace=False)]
        (q, qm), (d, dm) = padded(queries, b[:, 0]), padded(docs, b[:, 1])
        state, loss = step(state, q, qm, d, dm)
        losses.append(float(loss))
    nnx.update((proj, opt), state)
    return proj, losses
