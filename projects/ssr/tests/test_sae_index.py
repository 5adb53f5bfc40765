"""The TopK SAE and the SSR inverted index (spec section 6)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from flax import nnx

from projects.ssr.experiment import SAEConfig
from projects.ssr.inverted_index import InvertedIndex
from projects.ssr.late_interaction import TokenCollection, maxsim_dense, top_k
from projects.ssr.sae import TopKSAE, sparse_codes
from projects.ssr.sae_train import train_sae

RNG = np.random.default_rng(0)


def _random_codes(n: int, width: int = 512, k: int = 8) -> np.ndarray:
    z = np.zeros((n, width), np.float32)
    for i in range(n):
        z[i, RNG.choice(width, k, replace=False)] = RNG.exponential(size=k)
    return z


@pytest.fixture(scope="module")
def collection():
    docs = [_random_codes(int(RNG.integers(1, 12))) for _ in range(120)]
    return TokenCollection.from_list(docs)


def test_topk_keeps_the_k_largest_pre_activations_non_negative():
    sae = TopKSAE(16, 64, 5, rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(1), (40, 16))
    a = np.asarray(sae.pre_activations(x))
    z = np.asarray(sae.encode(x))
    for row_a, row_z in zip(a, z):
        top = np.argsort(-row_a)[:5]
        want = np.zeros(64, np.float32)
        want[top] = np.maximum(row_a[top], 0)
        np.testing.assert_array_equal(row_z, want)
        if (row_a > 0).sum() >= 5:
            assert (row_z > 0).sum() == 5
    assert (z >= 0).all()
    csr = sparse_codes(sae, np.asarray(x), batch=16)
    np.testing.assert_array_equal(csr.toarray(), z)
    np.testing.assert_allclose(sae(x)[0], sae.decode(sae.encode(x)), rtol=1e-5, atol=1e-6)


def test_a_linear_sae_learns_the_identity():
    """k = width, no ReLU, width >= dim: a linear autoencoder, reconstruction error -> ~0."""
    x = RNG.normal(size=(512, 8)).astype(np.float32)
    sae = TopKSAE(8, 16, 16, rngs=nnx.Rngs(0), relu=False)
    out = train_sae(
        sae,
        x,
        SAEConfig(width=16, ks=(16,), steps=400, batch_size=256, lr=1e-2, contrastive_k=0),
        seed=0,
    )
    x_hat = np.asarray(sae(jnp.asarray(x))[0])
    assert out["rec"] < 1e-3
    assert np.mean((x_hat - x) ** 2) / np.var(x) < 1e-3


def test_inverted_index_maxsim_equals_dense_maxsim_on_the_codes(collection):
    idx = InvertedIndex.build(TokenCollection(sp.csr_matrix(collection.vectors),
                                              collection.offsets))  # fmt: skip
    for _ in range(5):
        q = _random_codes(int(RNG.integers(1, 9)))
        exact = maxsim_dense(q, collection)
        np.testing.assert_allclose(idx.scores(q), exact, rtol=1e-6, atol=1e-6)
        for path in (idx._scores_sparse, idx._scores_dense):  # the two ways scores() may take
            np.testing.assert_allclose(path(sp.csr_matrix(q)), exact, rtol=1e-6, atol=1e-6)
        some = np.array([0, 17, 119])
        np.testing.assert_allclose(idx.scores(q, some), exact[some], rtol=1e-6, atol=1e-6)
        assert (idx.upper_bounds(q) >= exact - 1e-5).all()
        # pruning with C = collection size is the exact ranking
        np.testing.assert_array_equal(idx.search(q, 20, prune=len(collection)), top_k(exact, 20))


def test_negative_codes_and_empty_documents_are_refused(collection):
    with pytest.raises(ValueError, match="non-negative"):
        InvertedIndex.build(TokenCollection(-collection.vectors, collection.offsets))
    with pytest.raises(ValueError, match="at least one token"):
        TokenCollection(np.zeros((3, 4)), np.array([0, 2, 2, 3]))


def test_top_k_breaks_ties_by_id():
    s = np.array([1.0, 3.0, 3.0, 2.0, 3.0])
    assert top_k(s, 2).tolist() == [1, 2]
    assert top_k(s, 4, ids=np.array([10, 11, 12, 13, 14])).tolist() == [11, 12, 14, 13]


def test_bm25_on_a_three_document_collection_matches_hand_computed_scores():
    from projects.ssr.bm25 import BM25

    docs = ["the cat sat", "the cat cat ran far", "a dog"]  # lengths 3, 5, 2; avgdl 10/3
    bm = BM25.build(docs)
    k1, b, avgdl = 1.2, 0.75, 10 / 3

    def part(tf, dl, df):
        idf = np.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    want = [part(1, 3, 2), part(2, 5, 2), 0.0]  # "cat": df 2
    np.testing.assert_allclose(bm.scores("Cat!"), want, rtol=1e-12)
    want = [part(1, 3, 2) + part(1, 3, 1), part(2, 5, 2), part(1, 2, 1)]  # cat, sat, dog
    np.testing.assert_allclose(bm.scores("cat sat cat dog unicorn"), want, rtol=1e-12)
    assert bm.scores("unicorn").tolist() == [0.0, 0.0, 0.0]


def test_token_rows_and_plaid_without_pruning_is_maxsim_on_its_decompressed_vectors():
    from projects.ssr.late_interaction import token_rows
    from projects.ssr.plaid import PlaidIndex

    assert token_rows(np.array([0, 2, 5, 6]), np.array([2, 0])).tolist() == [5, 0, 1]
    docs = TokenCollection.from_list([RNG.normal(size=(int(RNG.integers(1, 6)), 8))
                                      .astype(np.float32) for _ in range(40)])  # fmt: skip
    plaid = PlaidIndex.build(docs, 6, bits=2)
    assert plaid.residual_bits.max() < 4
    assert set(plaid.timings) == {"clustering_s", "residual_coding_s"}
    everything = plaid.decompress(np.arange(len(docs)))
    q = RNG.normal(size=(3, 8)).astype(np.float32)
    got = plaid.search(q, 10, nprobe=6, rerank=len(docs))  # every centroid, every candidate
    np.testing.assert_array_equal(got, top_k(maxsim_dense(q, everything), 10))


def test_aux_loss_rebuilds_the_residual_from_dead_latents_only():
    from projects.ssr.sae import sae_losses

    sae = TopKSAE(16, 64, 4, rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(2), (32, 16))
    rec, aux, fired = sae_losses(sae, x, jnp.zeros(64, bool), aux_k=8)
    assert float(aux) == 0.0 and 0 < int(fired.sum()) <= 32 * 4
    assert np.asarray(fired).tolist() == (np.asarray(sae.encode(x)) > 0).any(0).tolist()
    _, aux_dead, _ = sae_losses(sae, x, jnp.ones(64, bool), aux_k=8)
    assert np.isfinite(float(aux_dead)) and float(aux_dead) > 0
    g = jax.grad(lambda m: sae_losses(m, x, jnp.ones(64, bool), 8)[1])(sae)
    assert np.abs(np.asarray(g.w_enc[...])).sum() > 0  # the aux loss trains the encoder


def test_cls_weight_tuning_in_one_pass_ranks_as_search_does(collection):
    from projects.ssr.experiment import SearchConfig
    from projects.ssr.pipeline import _tune_cls_weight
    from shared.metrics.retrieval import retrieval_metrics

    idx = InvertedIndex.build(collection, _random_codes(len(collection)))
    queries = TokenCollection.from_list([_random_codes(int(RNG.integers(1, 6))) for _ in range(6)])
    q_cls = _random_codes(len(queries))
    qrels = [{int(d): 1 for d in RNG.choice(len(collection), 2, replace=False)}
             for _ in range(len(queries))]  # fmt: skip
    s = SearchConfig(cls_weights=(0.0, 0.5, 4.0), depth=10)
    tuned = _tune_cls_weight(idx, queries.vectors, queries.offsets, q_cls, qrels, s)
    for w in s.cls_weights:
        ranked = [idx.search(queries.doc_tokens(i), 10, query_cls=q_cls[i], cls_weight=w)
                  for i in range(len(queries))]  # fmt: skip
        assert tuned[w] == retrieval_metrics(ranked, qrels)["ndcg@10"]
    assert len(set(tuned.values())) > 1  # the [CLS] term changes the ranking
