"""Recall@K / NDCG@K against hand-computed cases; masked items never reach the top-K."""

import jax.numpy as jnp
import numpy as np
import pytest

from shared.metrics.ranking import (
    mean_over_users,
    recall_ndcg_at_k,
    recall_ndcg_from_topk,
    top_k_items,
)


def _test_set(items, n=10):
    t = np.zeros((1, n), bool)
    t[0, list(items)] = True
    return jnp.asarray(t)


def test_hand_made_ranking():
    # test = {3, 7}, top-5 = [7, 1, 3, 2, 9]: hits at ranks 1 and 3
    recall, ndcg = recall_ndcg_from_topk(jnp.array([[7, 1, 3, 2, 9]]), _test_set({3, 7}))
    assert float(recall[0]) == pytest.approx(1.0)
    assert float(ndcg[0]) == pytest.approx((1 + 1 / 2) / (1 + 1 / np.log2(3)), abs=1e-6)


def test_partial_hits_and_ideal_dcg_capped_at_k():
    # test = {0, 1, 2, 3} (4 items), top-2 = [5, 2]: one hit at rank 2; ideal places 2 hits
    recall, ndcg = recall_ndcg_from_topk(jnp.array([[5, 2]]), _test_set({0, 1, 2, 3}))
    assert float(recall[0]) == pytest.approx(1 / 4)
    assert float(ndcg[0]) == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)), abs=1e-6)


def test_empty_test_set_is_nan_and_left_out_of_the_mean():
    topk = jnp.array([[0, 1], [0, 1]])
    test = jnp.asarray(np.array([[True, False, False], [False, False, False]]))
    recall, ndcg = recall_ndcg_from_topk(topk, test)
    assert np.isnan(float(recall[1])) and np.isnan(float(ndcg[1]))
    assert mean_over_users(recall) == pytest.approx(1.0)


def test_masked_items_never_in_top_k_even_with_the_best_scores():
    rng = np.random.default_rng(0)
    scores = jnp.asarray(rng.normal(size=(6, 30)).astype(np.float32))
    mask = np.zeros((6, 30), bool)
    best = np.argsort(-np.asarray(scores), axis=1)[:, :5]
    np.put_along_axis(mask, best, True, axis=1)  # mask exactly the 5 best of every user
    top = np.asarray(top_k_items(scores, jnp.asarray(mask), 5))
    assert not np.take_along_axis(mask, top, axis=1).any()
    np.testing.assert_array_equal(
        np.sort(top, 1), np.sort(np.argsort(-np.asarray(scores))[:, 5:10], 1)
    )


def test_full_ranking_with_mask_matches_a_manual_computation():
    scores = jnp.array([[0.9, 0.8, 0.1, 0.5, 0.3]])
    mask = jnp.array([[True, False, False, False, False]])  # item 0 is a training item
    test = jnp.array([[False, False, True, True, False]])
    recall, ndcg = recall_ndcg_at_k(scores, mask, test, 2)  # top-2 = [1, 3]: hit at rank 2
    assert float(recall[0]) == pytest.approx(0.5)
    assert float(ndcg[0]) == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)), abs=1e-6)
