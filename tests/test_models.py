import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from shared.models.attention import dot_product_attention
from shared.models.feature_tokenizer import FeatureTokenizer
from shared.models.layers import dropout, sinusoidal_positions
from shared.models.transformer import TransformerEncoder


def test_feature_tokenizer_shapes_and_cls_tokens():
    tok = FeatureTokenizer(3, (4, 2), 8, rngs=nnx.Rngs(0), n_cls=1)
    x_num, x_cat = jnp.ones((5, 3)), jnp.array([[3, 1]] * 5)
    out = tok(x_num, x_cat)
    assert out.shape == (5, 6, 8) and tok.num_tokens == 6
    np.testing.assert_allclose(out[:, 0], np.broadcast_to(tok.cls[...][0], (5, 8)))
    # a categorical token is its level's embedding row plus the column bias
    np.testing.assert_allclose(
        out[0, 5], tok.cat_embed[...][4 + 1] + tok.cat_bias[...][1], rtol=1e-6
    )
    assert FeatureTokenizer(2, (), 4, rngs=nnx.Rngs(0))(
        jnp.ones((1, 2)), jnp.zeros((1, 0), int)
    ).shape == (1, 2, 4)


def test_padding_tokens_do_not_change_valid_outputs():
    enc = TransformerEncoder(2, 8, 2, 16, rngs=nnx.Rngs(0))
    x = jax.random.normal(jax.random.key(0), (2, 5, 8))
    valid = jnp.array([[True] * 3 + [False] * 2] * 2)
    noisy = x.at[:, 3:].set(100.0)
    np.testing.assert_allclose(
        enc(x, valid=valid)[:, :3], enc(noisy, valid=valid)[:, :3], atol=1e-5
    )
    np.testing.assert_allclose(enc(x[:, :3]), enc(x, valid=valid)[:, :3], atol=1e-5)


def test_attention_matches_jax_reference():
    q, k, v = (jax.random.normal(jax.random.key(i), (2, 4, 2, 8)) for i in range(3))
    np.testing.assert_allclose(
        dot_product_attention(q, k, v), jax.nn.dot_product_attention(q, k, v), atol=1e-5
    )


def test_dropout_and_positions():
    x = jnp.ones((1000,))
    assert (dropout(x, 0.5, None) == x).all()
    y = dropout(x, 0.5, jax.random.key(0))
    assert 400 < int((y == 0).sum()) < 600 and float(y.max()) == 2.0
    table = sinusoidal_positions(7, 6, base=100.0)
    assert table.shape == (7, 6)
    np.testing.assert_allclose(table[3, 2], np.sin(3 * 100.0 ** (-2 / 6)), rtol=1e-6)
