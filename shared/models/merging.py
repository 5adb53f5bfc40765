"""Model merging over parameter pytrees: task vectors, task arithmetic and TIES-merging.

Every function is pure and takes pytrees of arrays (jax or numpy; the result is jax) that share
one structure, e.g. the `nnx.Param` state of an encoder as a pure dict.

    τ_i = θ_i − θ_0                      task_vector
    θ_m = θ_0 + λ Σ_i τ_i                task_arithmetic
    TIES (Yadav et al., 2023):           ties_merge
        τ̂_i = trim_mask(τ_i) · τ_i       keep the largest-|entry| share `keep` of each τ_i
        γ   = elect_signs([τ̂_i])         sign of Σ_i τ̂_i per entry
        τ_m = disjoint_mean([τ̂_i], γ)    mean of the entries whose sign agrees with γ
        θ_m = θ_0 + λ τ_m

Semantics follow the public TIES code (prateeksr/TIES-Merging, read for semantics only), where
each task vector is flattened over all of its parameters into one row:
- trim: with d entries, k = d − int(d · keep) and t = the k-th smallest |entry| (1-indexed); an
  entry is kept iff |entry| >= t. Without ties this keeps int(d · keep) + 1 entries (one more
  than the nominal share); every entry tied with t at the threshold is kept too, so ties can
  keep more. keep = 1 keeps everything (the public code would fail there with k = 0).
- elect: γ = sign(Σ_i τ̂_i); where the sum is exactly 0 the entry gets the "majority" sign, the
  sign of Σ γ over all entries of all leaves. Where that global sign is 0 too (a tied vote over
  the whole tree), γ stays 0 and the merged entry is 0. This last case departs from the public
  code, whose `γ > 0` test makes a 0 behave as −1; it only arises for a perfectly balanced vote.
- disjoint mean: an entry of τ̂_i counts iff it is nonzero with the sign of γ (strictly > 0 where
  γ = +1, strictly < 0 where γ = −1); τ_m is their sum over the count, and 0 where none count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

PyTree = Any


def task_vector(finetuned: PyTree, base: PyTree) -> PyTree:
    """τ = θ_finetuned − θ_0, leaf by leaf."""
    return jax.tree.map(lambda a, b: jnp.asarray(a) - jnp.asarray(b), finetuned, base)


def tree_sum(trees: Sequence[PyTree]) -> PyTree:
    """Σ_i trees[i], leaf by leaf (at least one tree)."""
    if not trees:
        raise ValueError("tree_sum needs at least one tree")
    return jax.tree.map(lambda *leaves: sum(jnp.asarray(x) for x in leaves), *trees)


def add_scaled(base: PyTree, delta: PyTree, lam: float) -> PyTree:
    """θ_0 + λ · delta, leaf by leaf."""
    return jax.tree.map(lambda b, d: jnp.asarray(b) + lam * jnp.asarray(d), base, delta)


def task_arithmetic(base: PyTree, vectors: Sequence[PyTree], lam: float) -> PyTree:
    """θ_m = θ_0 + λ Σ_i τ_i (Ilharco et al., 2023)."""
    return add_scaled(base, tree_sum(vectors), lam)


def _flat_abs(tree: PyTree) -> jax.Array:
    """|entries| of every leaf, flattened together: [d]."""
    return jnp.concatenate([jnp.abs(jnp.ravel(jnp.asarray(x))) for x in jax.tree.leaves(tree)])


def trim_threshold(vector: PyTree, keep: float = 0.2) -> jax.Array:
    """t = the k-th smallest |entry| of the whole task vector, k = d − int(d · keep)
    (1-indexed); 0 when keep = 1 (every entry kept)."""
    if not 0 < keep <= 1:
        raise ValueError(f"keep={keep} must be in (0, 1]")
    flat = _flat_abs(vector)
    d = flat.shape[0]
    k = d - int(d * keep)
    if k == 0:
        return jnp.zeros((), flat.dtype)
    return jnp.sort(flat)[k - 1]


def trim_mask(vector: PyTree, keep: float = 0.2) -> PyTree:
    """Boolean tree: True where |entry| >= trim_threshold(vector, keep) (ties at the threshold
    all kept; see the module docstring)."""
    t = trim_threshold(vector, keep)
    return jax.tree.map(lambda x: jnp.abs(jnp.asarray(x)) >= t, vector)


def trim(vector: PyTree, keep: float = 0.2) -> PyTree:
    """τ̂ = τ · trim_mask(τ, keep)."""
    mask = trim_mask(vector, keep)
    return jax.tree.map(lambda x, m: jnp.where(m, jnp.asarray(x), 0), vector, mask)


def elect_signs(trimmed: Sequence[PyTree]) -> PyTree:
    """γ = sign(Σ_i τ̂_i) per entry, in {−1, 0, +1} with the leaves' dtype; a zero sum takes the
    majority sign sign(Σ γ) over every entry of the tree (0 only when that vote is tied too)."""
    total = tree_sum(trimmed)
    signs = jax.tree.map(jnp.sign, total)
    majority = jnp.sign(sum(jnp.sum(s) for s in jax.tree.leaves(signs)))
    return jax.tree.map(lambda s: jnp.where(s == 0, majority, s).astype(s.dtype), signs)


def agreement_mask(trimmed: Sequence[PyTree], signs: PyTree) -> list[PyTree]:
    """Per task vector, True where its entry is nonzero with the elected sign."""

    def agree(x, s):
        x = jnp.asarray(x)
        return jnp.where(s > 0, x > 0, jnp.where(s < 0, x < 0, False))

    return [jax.tree.map(agree, t, signs) for t in trimmed]


def disjoint_mean(trimmed: Sequence[PyTree], signs: PyTree) -> PyTree:
    """τ_m: per entry, the mean over the task vectors whose entry agrees with the elected sign;
    0 where none agrees."""
    masks = agreement_mask(trimmed, signs)
    picked = [jax.tree.map(lambda x, m: jnp.where(m, jnp.asarray(x), 0), t, m)
              for t, m in zip(trimmed, masks)]  # fmt: skip
    total = tree_sum(picked)
    count = tree_sum([jax.tree.map(lambda m: m.astype(jnp.int32), m) for m in masks])
    return jax.tree.map(lambda s, c: s / jnp.maximum(c, 1).astype(s.dtype), total, count)


def ties_vector(vectors: Sequence[PyTree], keep: float = 0.2) -> PyTree:
    """τ_m of TIES: trim each task vector, elect signs, take the disjoint mean."""
    trimmed = [trim(v, keep) for v in vectors]
    return disjoint_mean(trimmed, elect_signs(trimmed))


def ties_merge(base: PyTree, vectors: Sequence[PyTree], lam: float, keep: float = 0.2) -> PyTree:
    """θ_m = θ_0 + λ · τ_m (TIES-merging)."""
    return add_scaled(base, ties_vector(vectors, keep), lam)
