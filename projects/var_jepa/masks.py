"""T-JEPA's multi-block feature mask sampler (From the official code,
jose-melo/t-jepa, src/mask.py).

Per batch: draw the context size n_ctx in [round(D*min_ctx), round(D*max_ctx)] and the target size
n_trgt in [round(D*min_trgt), round(D*max_trgt)], redrawing until num_encs*n_ctx + n_trgt <= D.
Per sample: a random context set, then `num_preds` target sets drawn from the remaining indices
(context and targets disjoint; target sets may overlap each other).

Sizes change from batch to batch. So that jit compiles a few times only, index arrays are padded
to a bucket edge (`padded_sizes`: a few edges per axis, or the largest size) and carry a validity
mask; sizes are drawn on the host (numpy, seeded by the step) and the indices inside the jitted
step (JAX, `fold_in(key, step)`). Padding never changes the loss: padded keys get zero attention
weight and padded targets zero loss weight.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from shared.config import Fraction, PositiveInt


@dataclasses.dataclass(frozen=True)
class MaskConfig:
    min_ctx_share: Fraction = 0.136  # T-JEPA launch script (jannis)
    max_ctx_share: Fraction = 0.368
    min_trgt_share: Fraction = 0.156
    max_trgt_share: Fraction = 0.622
    num_preds: PositiveInt = 4  # target sets per sample (MASK_NUM_PREDS)
    num_encs: PositiveInt = 1  # context sets per sample (the official default)
    # Faithful quirk of the official code: mask indices run over 0..D-1 of a token sequence that
    # starts with the [REG] token, so index 0 picks [REG] and the last feature is never masked.
    # False: indices run over the feature tokens and [REG] always joins the context.
    mask_includes_reg: bool = True

    def validate(self) -> None:
        for name in ("min_ctx_share", "max_ctx_share", "min_trgt_share", "max_trgt_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"mask.{name}={getattr(self, name)} must lie in [0, 1]")
        if self.min_ctx_share > self.max_ctx_share or self.min_trgt_share > self.max_trgt_share:
            raise ValueError("mask: each min_*_share must not exceed its max_*_share")
        if self.num_preds < 1 or self.num_encs != 1:
            raise ValueError(
                "mask.num_preds must be >= 1 and mask.num_encs must be 1 "
                "(several context sets are not implemented)"
            )


def size_ranges(d: int, cfg: MaskConfig) -> tuple[tuple[int, int], tuple[int, int]]:
    """Inclusive (low, high) ranges of n_ctx and n_trgt for D = d maskable indices (at least 1)."""
    r = lambda share: max(1, int(round(d * share)))
    ctx = (r(cfg.min_ctx_share), r(cfg.max_ctx_share))
    trgt = (r(cfg.min_trgt_share), r(cfg.max_trgt_share))
    if cfg.num_encs * ctx[0] + trgt[0] > d:
        raise ValueError(
            f"mask shares admit no sizes with {d} features: the smallest context "
            f"({ctx[0]}) plus the smallest target ({trgt[0]}) exceeds {d}"
        )
    return ctx, trgt


def max_sizes(d: int, cfg: MaskConfig) -> tuple[int, int]:
    """Padded sizes: the largest n_ctx and n_trgt that can be drawn together."""
    (c_lo, c_hi), (t_lo, t_hi) = size_ranges(d, cfg)
    return min(c_hi, d - t_lo), min(t_hi, d - c_lo)


def sample_sizes(rng: np.random.Generator, d: int, cfg: MaskConfig) -> tuple[int, int]:
    """(n_ctx, n_trgt) for one batch, drawn as the official MaskCollator does: each size is
    `low + round((high - low) * u)` with u ~ U[0, 1) in float32 (so both ends have half the
    weight of the inner sizes), both redrawn until num_encs * n_ctx + n_trgt <= d."""
    (c_lo, c_hi), (t_lo, t_hi) = size_ranges(d, cfg)

    def draw(lo: int, hi: int) -> int:
        return lo + int(np.round(np.float32(hi - lo) * rng.random(dtype=np.float32)))

    while True:
        n_ctx = draw(c_lo, c_hi)
        n_trgt = draw(t_lo, t_hi)
        if cfg.num_encs * n_ctx + n_trgt <= d:
            return n_ctx, n_trgt


def bucket_edges(low: int, high: int, buckets: int) -> tuple[int, ...]:
    """Padded sizes for sizes in [low, high]: `buckets` edges of equal width ending at `high`;
    every size when buckets is 0 or at least the number of sizes."""
    count = high - low + 1
    if buckets <= 0 or buckets >= count:
        return tuple(range(low, high + 1))
    return tuple(
        sorted({low - 1 + int(np.ceil(count * i / buckets)) for i in range(1, buckets + 1)})
    )


def padded_sizes(sizes: tuple[int, int], d: int, cfg: MaskConfig, buckets: int) -> tuple[int, int]:
    """The (context, target) shapes one step is compiled for: each size rounded up to its
    bucket edge (`bucket_edges`), capped at `max_sizes`; buckets=1 pads to `max_sizes`."""
    (c_lo, _), (t_lo, _) = size_ranges(d, cfg)
    max_ctx, max_trgt = max_sizes(d, cfg)
    out = []
    for n, lo, hi in ((sizes[0], c_lo, max_ctx), (sizes[1], t_lo, max_trgt)):
        if not lo <= n <= hi:
            raise ValueError(f"mask size {n} lies outside [{lo}, {hi}]")
        out.append(next(e for e in bucket_edges(lo, hi, buckets) if e >= n))
    return out[0], out[1]


def sample_indices(
    key: jax.Array,
    batch: int,
    d: int,
    n_ctx: jax.Array,
    n_trgt: jax.Array,
    max_ctx: int,
    max_trgt: int,
    num_preds: int,
):
    """Context and target index sets over 0..d-1, padded.

    Returns ctx [B, max_ctx] int, ctx_valid [max_ctx] bool, trgt [P, B, max_trgt] int,
    trgt_valid [max_trgt] bool. Padding slots hold valid indices (never read as data).
    """
    k_ctx, k_trgt = jax.random.split(key)
    perm = jnp.argsort(jax.random.uniform(k_ctx, (batch, d)), axis=1)
    ctx = perm[:, :max_ctx]
    ctx_valid = jnp.arange(max_ctx) < n_ctx
    # rank of every index in the permutation: the first n_ctx ranks are the context
    rank = jnp.argsort(perm, axis=1)
    in_ctx = rank < n_ctx  # [B, d]
    scores = jax.random.uniform(k_trgt, (num_preds, batch, d))
    scores = jnp.where(in_ctx[None], 2.0, scores)  # context indices sort after every other index
    trgt = jnp.argsort(scores, axis=2)[:, :, :max_trgt]
    trgt_valid = jnp.arange(max_trgt) < n_trgt
    return ctx, ctx_valid, trgt, trgt_valid
