import jax
import jax.numpy as jnp
import numpy as np
import pytest

from projects.var_jepa import masks
from projects.var_jepa.tjepa_model import token_positions

CFG = masks.MaskConfig()


@pytest.mark.parametrize("d", [6, 14, 30])
def test_sizes_respect_ranges_and_the_budget(d):
    (c_lo, c_hi), (t_lo, t_hi) = masks.size_ranges(d, CFG)
    max_ctx, max_trgt = masks.max_sizes(d, CFG)
    rng = np.random.default_rng(0)
    for _ in range(200):
        n_ctx, n_trgt = masks.sample_sizes(rng, d, CFG)
        assert c_lo <= n_ctx <= min(c_hi, max_ctx) and t_lo <= n_trgt <= min(t_hi, max_trgt)
        assert n_ctx + n_trgt <= d


def test_context_and_targets_are_disjoint_valid_and_reproducible():
    d, b, p = 14, 64, 4
    n_ctx, n_trgt = 4, 7
    max_ctx, max_trgt = masks.max_sizes(d, CFG)
    out = masks.sample_indices(jax.random.key(0), b, d, n_ctx, n_trgt, max_ctx, max_trgt, p)
    again = masks.sample_indices(jax.random.key(0), b, d, n_ctx, n_trgt, max_ctx, max_trgt, p)
    for x, y in zip(out, again):
        np.testing.assert_array_equal(x, y)
    ctx, ctx_valid, trgt, trgt_valid = map(np.asarray, out)
    assert ctx.shape == (b, max_ctx) and trgt.shape == (p, b, max_trgt)
    assert ctx_valid.sum() == n_ctx and trgt_valid.sum() == n_trgt
    assert ctx.min() >= 0 and ctx.max() < d and trgt.min() >= 0 and trgt.max() < d
    for i in range(b):
        c = set(ctx[i, :n_ctx])
        assert len(c) == n_ctx
        for k in range(p):
            t = set(trgt[k, i, :n_trgt])
            assert len(t) == n_trgt and not (c & t)
    # target sets differ between predictions (they are drawn independently)
    assert not np.array_equal(trgt[0, :, :n_trgt], trgt[1, :, :n_trgt])


def test_mask_index_zero_is_the_reg_token_in_faithful_mode():
    ctx = jnp.array([[0, 3]])
    trgt = jnp.array([[[1, 2]]])
    pos, valid, tpos = token_positions(ctx, jnp.array([True, True]), trgt, 1, True)
    assert pos.tolist() == [[0, 3]] and tpos.tolist() == [[[1, 2]]]  # position 0 = [REG]
    pos, valid, tpos = token_positions(ctx, jnp.array([True, False]), trgt, 1, False)
    assert pos.tolist() == [[0, 1, 4]] and valid.tolist() == [[True, True, False]]
    assert tpos.tolist() == [[[2, 3]]]


def test_impossible_shares_fail_clearly():
    bad = masks.MaskConfig(
        min_ctx_share=0.6, min_trgt_share=0.6, max_ctx_share=0.7, max_trgt_share=0.7
    )
    with pytest.raises(ValueError, match="admit no sizes"):
        masks.size_ranges(10, bad)
    with pytest.raises(ValueError, match="min_"):
        masks.MaskConfig(min_ctx_share=0.5, max_ctx_share=0.2).validate()
