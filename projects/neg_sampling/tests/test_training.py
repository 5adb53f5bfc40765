"""BPR / K-negative loss closed forms, negative mixing, and the synthetic data's invariants."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.neg_sampling import data as data_lib
from projects.neg_sampling import movielens
from projects.neg_sampling.train import k_negative_loss, negative_embeddings


def test_bpr_is_softplus_and_k_negative_is_logsumexp():
    rng = np.random.default_rng(0)
    s_pos = jnp.asarray(rng.normal(size=7).astype(np.float32))
    s_neg = jnp.asarray(rng.normal(size=(7, 1)).astype(np.float32))
    expected = jax.nn.softplus(-(s_pos - s_neg[:, 0])).mean()
    np.testing.assert_allclose(k_negative_loss(s_pos, s_neg), expected, rtol=1e-6)
    s_neg4 = rng.normal(size=(7, 4))
    diff = s_neg4 - np.asarray(s_pos)[:, None]
    ref = np.log1p(np.exp(diff).sum(1)).mean()  # log(1 + Σ_k exp(s_k − s⁺))
    np.testing.assert_allclose(k_negative_loss(s_pos, jnp.asarray(s_neg4, jnp.float32)), ref, 1e-5)


def test_negative_embeddings_mix_per_layer():
    layers = jnp.asarray(np.random.default_rng(1).normal(size=(3, 6, 2)).astype(np.float32))
    items = jnp.array([[0, 1, 2]])
    pos = jnp.array([3])
    alpha = jnp.array([[0.0, 0.5, 1.0]])
    out = np.asarray(negative_embeddings(layers, 2, pos, items, alpha))[0]
    lay = np.asarray(layers)
    np.testing.assert_allclose(out[0], lay[0, 2], atol=1e-6)  # α = 0: item 0 (node 2)
    np.testing.assert_allclose(out[1], 0.5 * lay[1, 5] + 0.5 * lay[1, 3], atol=1e-6)
    np.testing.assert_allclose(out[2], lay[2, 5], atol=1e-6)  # α = 1: the positive (node 5)


def test_true_preferences_hit_the_target_density():
    p = data_lib.true_preferences(300, 200, 8, 0.1, 0.02, seed=0)
    assert p.mean() == pytest.approx(0.02, rel=1e-6)


@pytest.mark.parametrize("kappa", [None, 1.0])
def test_observation_and_split_partition_the_true_edges(kappa):
    inter = data_lib.synthetic(400, 300, 8, 0.1, 0.03, 0.5, kappa, seed=1)
    parts = [inter.mask(p) for p in ("train", "valid", "test", "hidden")]
    assert sum(m.sum() for m in parts) == inter.true_pos.sum()  # disjoint ...
    np.testing.assert_array_equal(np.logical_or.reduce(parts), inter.true_pos)  # ... and complete
    observed = parts[0] | parts[1] | parts[2]
    assert observed.sum() / inter.true_pos.sum() == pytest.approx(0.5, abs=0.03)
    assert len(inter.train) / observed.sum() == pytest.approx(0.8, abs=1e-3)
    pop = inter.true_pos.sum(0)
    hi, lo = pop >= np.quantile(pop, 0.75), pop <= np.quantile(pop, 0.25)
    rate = lambda m: observed[:, m].sum() / inter.true_pos[:, m].sum()  # noqa: E731
    if kappa is None:
        assert abs(rate(hi) - rate(lo)) < 0.1
    else:
        assert rate(hi) > 2 * rate(lo)  # missing not at random: popular items are seen more


def test_negative_pool_is_allowed_and_uniform():
    forbidden = np.zeros((2, 10), bool)
    forbidden[0, :7] = True  # user 0: only items 7, 8, 9 allowed
    pool = data_lib.negative_pool(forbidden, 3000, np.random.default_rng(0))
    assert set(np.unique(pool[0])) == {7, 8, 9}
    assert np.abs(np.bincount(pool[0], minlength=10)[7:] / 3000 - 1 / 3).max() < 0.04
    forbidden[1] = True
    with pytest.raises(ValueError, match="user 1"):
        data_lib.negative_pool(forbidden, 3, np.random.default_rng(0))


def test_movielens_csv_loader_and_missing_source(tmp_path, monkeypatch):
    csv = tmp_path / "ratings.csv"
    csv.write_text(
        "userId,movieId,rating,timestamp\n1,10,4.0,0\n1,20,2.0,0\n2,20,5.0,0\n3,30,1.0,0\n"
    )
    users, items, ratings = movielens.load_ratings(str(tmp_path))
    np.testing.assert_array_equal(users, [1, 1, 2, 3])
    pos = movielens.positives_matrix(users, items, ratings, 4.0)
    # users 1, 2 and items 10, 20 have a positive; user 3 / item 30 are dropped
    np.testing.assert_array_equal(pos, [[True, False], [False, True]])
    monkeypatch.delenv("MOVIELENS_DIR", raising=False)
    monkeypatch.setattr(movielens, "find_source", lambda d: None)
    with pytest.raises(FileNotFoundError, match="r-cran-dslabs"):
        movielens.load_ratings(str(tmp_path / "empty"))


def test_real_movielens_from_the_debian_package(monkeypatch):
    monkeypatch.delenv("MOVIELENS_DIR", raising=False)
    if movielens.find_source(None) is None:
        pytest.skip("MovieLens (Debian r-cran-dslabs) not unpacked: run `make env`")
    users, items, ratings = movielens.load_ratings(None)
    # ml-latest-small as dslabs ships it (DATA.md): 100,004 ratings, 671 users, 9,066 movies
    assert len(ratings) == 100_004
    assert len(np.unique(users)) == 671 and len(np.unique(items)) == 9_066
    assert set(np.unique(ratings)) == {0.5 * k for k in range(1, 11)}
