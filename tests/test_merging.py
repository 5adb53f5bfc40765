"""Task arithmetic and TIES-merging (shared/models/merging.py) against NumPy float64 references.

The TIES reference below is written from the public code's semantics, entry by entry: per task
vector flattened over all leaves, k = d − int(d · keep), keep |x| >= the k-th smallest |x|;
elected sign = sign of the sum, a zero sum taking the sign of the summed signs over the tree;
disjoint mean over the entries that are nonzero with the elected sign, 0 where none is.
"""

import jax
import numpy as np
import pytest

from shared.models import merging


def _flat(tree) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree.leaves(tree)])


def ties_reference(vectors: list[np.ndarray], keep: float):
    """(masks [n, d], elected signs [d], merged τ_m [d]) in float64, loop per entry."""
    v = np.asarray(vectors, np.float64)
    n, d = v.shape
    masks = np.zeros((n, d), bool)
    for i in range(n):
        k = d - int(d * keep)
        t = 0.0 if k == 0 else np.partition(np.abs(v[i]), k - 1)[k - 1]
        masks[i] = np.abs(v[i]) >= t
    trimmed = np.where(masks, v, 0.0)
    signs = np.sign(trimmed.sum(0))
    majority = np.sign(signs.sum())
    signs[signs == 0] = majority
    merged = np.zeros(d)
    for j in range(d):
        agree = [x for x in trimmed[:, j] if x != 0 and np.sign(x) == signs[j]]
        merged[j] = np.mean(agree) if agree else 0.0
    return masks, signs, merged


# 3 task vectors x 5 entries, split over two leaves ("a": entries 0-2, "b": entries 3-4).
# keep = 0.6: d = 5, k = 5 - int(3.0) = 2, threshold = 2nd smallest |x|.
#  τ1: |x| = 3, 1, 2, 0, 0.5 -> t = 0.5 -> entry 3 (a zero) trimmed; 4 kept
#  τ2: |x| = 2, 1, 1, 1, 4   -> t = 1 (three-way magnitude tie) -> all 5 kept
#  τ3: |x| = 1, 1, 3, 1, 0.1 -> t = 1 -> entry 4 trimmed
# sums: 2, 1, 0, 0, -3.5 -> signs +, +, 0, 0, -; majority sign(1 + 1 - 1) = + fills the zeros
HAND = np.array([
    [3.0, -1.0, 2.0, 0.0, 0.5],
    [-2.0, 1.0, 1.0, 1.0, -4.0],
    [1.0, 1.0, -3.0, -1.0, 0.1],
])  # fmt: skip
HAND_MASKS = np.array([
    [1, 1, 1, 0, 1],
    [1, 1, 1, 1, 1],
    [1, 1, 1, 1, 0],
], bool)  # fmt: skip
HAND_SIGNS = np.array([1.0, 1.0, 1.0, 1.0, -1.0])
# entry 0: 3, 1 agree -> 2; 1: 1, 1 -> 1; 2 (zero sum): 2, 1 -> 1.5; 3 (zero sum, τ1 trimmed):
# 1 -> 1; 4: only -4 agrees -> -4
HAND_MERGED = np.array([2.0, 1.0, 1.5, 1.0, -4.0])


def _tree(row):
    return {"a": np.asarray(row[:3], np.float32), "b": np.asarray(row[3:], np.float32)}


def test_hand_example_masks_signs_and_disjoint_mean():
    masks, signs, merged = ties_reference(list(HAND), keep=0.6)
    np.testing.assert_array_equal(masks, HAND_MASKS)
    np.testing.assert_array_equal(signs, HAND_SIGNS)
    np.testing.assert_array_equal(merged, HAND_MERGED)
    trees = [_tree(r) for r in HAND]
    for tree, want in zip(trees, HAND_MASKS):
        np.testing.assert_array_equal(_flat(merging.trim_mask(tree, 0.6)), want)
    trimmed = [merging.trim(t, 0.6) for t in trees]
    np.testing.assert_array_equal(_flat(merging.elect_signs(trimmed)), HAND_SIGNS)
    np.testing.assert_array_equal(_flat(merging.ties_vector(trees, 0.6)), HAND_MERGED)
    base = _tree(np.arange(5.0))
    merged = merging.ties_merge(base, trees, lam=0.5, keep=0.6)
    np.testing.assert_allclose(_flat(merged), np.arange(5.0) + 0.5 * HAND_MERGED)


def test_trim_threshold_is_over_all_leaves_together():
    # d = 5, keep = 0.4: k = 3, t = 3rd smallest = 8 -> leaf "a" kept whole, "b" dropped whole
    tree = {"a": np.array([10.0, -9.0, 8.0]), "b": np.array([1.0, 2.0])}
    mask = merging.trim_mask(tree, 0.4)
    np.testing.assert_array_equal(mask["a"], [True, True, True])
    np.testing.assert_array_equal(mask["b"], [False, False])
    assert np.asarray(merging.trim_mask(tree, 1.0)["b"]).all()  # keep = 1: everything
    with pytest.raises(ValueError, match="keep"):
        merging.trim_mask(tree, 0.0)


def test_a_tied_global_vote_leaves_zero_sum_entries_at_zero():
    # sums 0, -1, 1 -> signs 0, -, + ; majority sign(0) = 0 -> entry 0 is 0
    trees = [{"w": np.array([1.0, -1.0, 1.0])}, {"w": np.array([-1.0, 0.0, 0.0])}]
    signs = merging.elect_signs(trees)
    np.testing.assert_array_equal(signs["w"], [0.0, -1.0, 1.0])
    np.testing.assert_array_equal(merging.disjoint_mean(trees, signs)["w"], [0.0, -1.0, 1.0])
    # a zero sum with a negative majority takes the negative entries
    trees = [{"w": np.array([1.0, -2.0])}, {"w": np.array([-1.0, 1.0])}]
    signs = merging.elect_signs(trees)
    np.testing.assert_array_equal(signs["w"], [-1.0, -1.0])
    np.testing.assert_array_equal(merging.disjoint_mean(trees, signs)["w"], [-1.0, -2.0])


def test_disjoint_mean_is_zero_where_every_entry_disagrees_or_is_zero():
    trees = [{"w": np.array([1.0, 0.0, 2.0])}, {"w": np.array([3.0, 0.0, -2.0])}]
    signs = {"w": np.array([-1.0, 1.0, 1.0])}  # entry 0: both disagree; entry 1: all zero
    np.testing.assert_array_equal(merging.disjoint_mean(trees, signs)["w"], [0.0, 0.0, 2.0])


@pytest.mark.parametrize("keep", [0.2, 0.5, 1.0])
def test_ties_on_random_trees_matches_the_reference(keep):
    rng = np.random.default_rng(0)
    shapes = {"conv": {"kernel": (3, 3, 2, 4)}, "dense": {"kernel": (7, 5), "bias": (5,)}}
    vectors = []
    for _ in range(4):
        tree = jax.tree.map(lambda s: rng.normal(size=s).astype(np.float32), shapes,
                            is_leaf=lambda s: isinstance(s, tuple))  # fmt: skip
        tree["dense"]["bias"][:2] = 0.0  # exact zeros
        tree["dense"]["bias"][2:] = 0.5  # magnitude ties
        vectors.append(tree)
    masks, signs, merged = ties_reference([_flat(v) for v in vectors], keep)
    for v, m in zip(vectors, masks):
        np.testing.assert_array_equal(_flat(merging.trim_mask(v, keep)), m)
    trimmed = [merging.trim(v, keep) for v in vectors]
    np.testing.assert_array_equal(_flat(merging.elect_signs(trimmed)), signs)
    np.testing.assert_allclose(_flat(merging.ties_vector(vectors, keep)), merged, rtol=1e-6)


def test_task_arithmetic_on_random_trees_and_lambda_zero_gives_base():
    rng = np.random.default_rng(1)
    base = {"a": rng.normal(size=(4, 3)).astype(np.float32), "b": rng.normal(size=(2,))}
    tuned = [jax.tree.map(lambda x: x + rng.normal(size=x.shape).astype(x.dtype), base)
             for _ in range(3)]  # fmt: skip
    taus = [merging.task_vector(t, base) for t in tuned]
    for tau, t in zip(taus, tuned):
        np.testing.assert_allclose(tau["a"], t["a"] - base["a"], rtol=1e-6)
    merged = merging.task_arithmetic(base, taus, lam=0.3)
    for k in base:
        want = np.asarray(base[k], np.float64) + 0.3 * sum(
            np.asarray(t[k], np.float64) - base[k] for t in tuned
        )
        np.testing.assert_allclose(merged[k], want, rtol=1e-5, atol=1e-6)
    zero = merging.task_arithmetic(base, taus, lam=0.0)
    for k in base:
        np.testing.assert_array_equal(zero[k], np.asarray(base[k], np.asarray(zero[k]).dtype))
