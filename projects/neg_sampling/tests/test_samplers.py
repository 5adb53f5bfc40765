"""Samplers: never a forbidden item, the oracle draws true negatives, proposal frequencies (χ²),
DNS/AHNS/MixGCF picks against numpy, R1 at τ → ∞ is uniform, R2 at π⁺ = 0 is R1."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from projects.neg_sampling import samplers as smp

U, NI, L, D = 5, 20, 3, 4
# jitted once per (sampler, shapes, params): far cheaper than op-by-op dispatch
sample = jax.jit(smp.sample, static_argnums=(0, 5, 7))
draw_candidates = jax.jit(smp.draw_candidates, static_argnums=(2,))


def _layers(seed=0):
    return jnp.asarray(np.random.default_rng(seed).normal(size=(L, U + NI, D)).astype(np.float32))


def _data(forbidden, weights=None, pool_len=60):
    """Pool = each user's allowed items cycled to `pool_len` entries (exactly uniform over the
    allowed items when pool_len is a multiple of their count)."""
    pool = np.stack([np.resize(np.flatnonzero(~f), pool_len) for f in forbidden])
    w = np.ones(NI) if weights is None else weights
    return smp.SamplerData(
        forbidden=jnp.asarray(forbidden),
        pool=jnp.asarray(pool, jnp.int32),
        proposal_cdf=jnp.asarray(np.cumsum(w / w.sum()), jnp.float32),
    )


def _forbidden(seed=0, frac=0.5):
    f = np.random.default_rng(seed).random((U, NI)) < frac
    f[:, :10] = False  # at least 10 allowed items per user
    return f


@pytest.mark.parametrize("name", smp.SAMPLERS)
def test_no_sampler_returns_a_forbidden_item(name):
    forbidden = _forbidden()  # half of the items forbidden: rejection and fallback both fire
    data = _data(forbidden)
    users = jnp.asarray(np.tile(np.arange(U), 200), jnp.int32)
    pos = jnp.asarray(np.tile(np.arange(U), 200) % NI, jnp.int32)
    params = smp.SamplerParams(n_negs=8, pi_plus=0.2)
    for s in range(3):
        items, alpha = sample(name, jax.random.key(s), users, pos, _layers(), U, data, params)
        assert items.shape == (len(users), L) and alpha.shape == (len(users), L)
        assert not forbidden[np.asarray(users)[:, None], np.asarray(items)].any()
        if name != "mixgcf":
            assert np.all(np.asarray(alpha) == 0)


def test_oracle_sampler_draws_true_negatives_only():
    true_pos = _forbidden(seed=3, frac=0.7)  # the oracle forbids every true positive
    users = jnp.asarray(np.repeat(np.arange(U), 400), jnp.int32)
    items, _ = sample(
        "oracle",
        jax.random.key(0),
        users,
        users,
        _layers(),
        U,
        _data(true_pos),
        smp.SamplerParams(),
    )
    fnr = true_pos[np.asarray(users)[:, None], np.asarray(items)].mean()
    assert fnr == 0.0
    # while a uniform draw over the same items does hit true positives
    train = np.zeros((U, NI), bool)
    uni, _ = sample(
        "uniform", jax.random.key(0), users, users, _layers(), U, _data(train), smp.SamplerParams()
    )
    assert true_pos[np.asarray(users)[:, None], np.asarray(uni)].mean() > 0.3


def _chi2_pvalue(samples, probs):
    counts = np.bincount(samples, minlength=len(probs))
    keep = probs > 0
    assert counts[~keep].sum() == 0
    return stats.chisquare(counts[keep], probs[keep] / probs[keep].sum() * counts.sum()).pvalue


def test_uniform_frequencies_over_allowed_items_chi2():
    forbidden = np.zeros((U, NI), bool)
    forbidden[0, [3, 7, 11]] = True  # user 0: 17 allowed items
    users = jnp.zeros(100_000, jnp.int32)
    items, _ = sample(
        "uniform",
        jax.random.key(1),
        users,
        users,
        _layers(),
        U,
        _data(forbidden, pool_len=17 * 20),
        smp.SamplerParams(),
    )
    target = (~forbidden[0]).astype(float)
    assert _chi2_pvalue(np.asarray(items[:, 0]), target) > 1e-3


def test_popularity_frequencies_chi2():
    deg = np.random.default_rng(0).integers(0, 50, NI).astype(float)
    deg[4] = 0  # never drawn
    w = deg**0.75
    users = jnp.zeros(100_000, jnp.int32)
    data = _data(np.zeros((U, NI), bool), weights=w)
    items, _ = sample(
        "popularity", jax.random.key(2), users, users, _layers(), U, data, smp.SamplerParams()
    )
    assert _chi2_pvalue(np.asarray(items[:, 0]), w) > 1e-3


def _candidates_and_scores(key, users, data, p, layers):
    k_cand, k_pick = jax.random.split(key)
    cand = np.asarray(draw_candidates(k_cand, users, p.n_negs, data))
    pooled = np.asarray(layers).mean(0)
    s = np.einsum("bd,bnd->bn", pooled[np.asarray(users)], pooled[U + cand])
    return cand, s, k_pick, pooled


def test_dns_and_ahns_picks_match_numpy():
    layers, data, p = _layers(1), _data(_forbidden(1, 0.2)), smp.SamplerParams(n_negs=6)
    users = jnp.asarray(np.arange(U).repeat(4), jnp.int32)
    pos = jnp.asarray(np.arange(U * 4) % 10 + 10, jnp.int32)
    key = jax.random.key(5)
    cand, s, _, pooled = _candidates_and_scores(key, users, data, p, layers)
    dns, _ = sample("dns", key, users, pos, layers, U, data, p)
    np.testing.assert_array_equal(np.asarray(dns[:, 0]), cand[np.arange(len(cand)), s.argmax(1)])
    s_pos = (pooled[np.asarray(users)] * pooled[U + np.asarray(pos)]).sum(1)
    target = p.ahns_beta * np.maximum(s_pos + p.ahns_alpha, p.ahns_min_base) ** (p.ahns_p + 1)
    ahns, _ = sample("ahns", key, users, pos, layers, U, data, p)
    expected = cand[np.arange(len(cand)), np.abs(s - target[:, None]).argmin(1)]
    np.testing.assert_array_equal(np.asarray(ahns[:, 0]), expected)


def test_mixgcf_picks_the_best_mixed_candidate_per_layer():
    layers, data, p = _layers(2), _data(_forbidden(2, 0.2)), smp.SamplerParams(n_negs=6)
    users = jnp.asarray(np.arange(U).repeat(3), jnp.int32)
    pos = jnp.asarray(np.arange(U * 3) % 10, jnp.int32)
    key = jax.random.key(7)
    cand, _, k_pick, _ = _candidates_and_scores(key, users, data, p, layers)
    items, alpha = sample("mixgcf", key, users, pos, layers, U, data, p)
    a, items = np.asarray(alpha), np.asarray(items)
    assert np.all((a > 0) & (a < 1))
    lay, u, ps = np.asarray(layers), np.asarray(users), np.asarray(pos)
    for b in range(len(u)):
        for layer in range(L):
            mixed = (
                a[b, layer] * lay[layer, U + ps[b]] + (1 - a[b, layer]) * lay[layer, U + cand[b]]
            )
            assert items[b, layer] == cand[b, np.argmax(mixed @ lay[layer, u[b]])]


def test_r1_at_infinite_temperature_is_uniform_and_r2_at_zero_prior_is_r1():
    layers, data = _layers(3), _data(_forbidden(3, 0.2))
    users = jnp.asarray(np.arange(U).repeat(50), jnp.int32)
    key = jax.random.key(11)
    hot = smp.SamplerParams(n_negs=8, tau=1e12)
    cand, _, k_pick, _ = _candidates_and_scores(key, users, data, hot, layers)
    r1, _ = sample("r1", key, users, users, layers, U, data, hot)
    uniform_pick = np.asarray(jax.random.categorical(k_pick, jnp.zeros(cand.shape), axis=-1))
    np.testing.assert_array_equal(np.asarray(r1[:, 0]), cand[np.arange(len(cand)), uniform_pick])
    p = smp.SamplerParams(n_negs=8, tau=0.5)
    r1, _ = sample("r1", key, users, users, layers, U, data, p)
    r2, _ = sample("r2", key, users, users, layers, U, data, p)
    np.testing.assert_array_equal(np.asarray(r1), np.asarray(r2))


def test_r2_weights_damp_the_likely_hidden_positives():
    s = jnp.array([[0.0, 1.0, 2.0, 6.0]])
    p = smp.SamplerParams(pi_plus=0.2, tau=1.0)
    log_w = np.asarray(smp.r2_log_weights(s, p))[0]
    w = np.exp(np.asarray(s[0]))
    ratio = w / w.mean()
    expected = np.log(w) + np.log(np.maximum(1 - 0.2 * ratio, p.r2_floor))
    np.testing.assert_allclose(log_w, expected, rtol=1e-5, atol=1e-5)
    assert log_w[3] - log_w[2] < 6.0 - 2.0  # the top candidate is damped relative to R1
