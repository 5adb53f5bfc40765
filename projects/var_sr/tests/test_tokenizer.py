"""The tokenizer: shapes of the prefix decodes, the LR tokenization by the first scales, the
overlap measure, and that both variants' losses train."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from projects.var_sr.tokenizer import Tokenizer, token_overlap, tokenizer_loss


@pytest.fixture(scope="module")
def images():
    x = jax.random.uniform(jax.random.key(0), (4, 32, 32, 3))
    return x, jax.image.resize(x, (4, 8, 8, 3), "bicubic", antialias=True)


def _model():
    return Tokenizer((1, 2, 4, 8), vocab=32, dim=8, width=16, rngs=nnx.Rngs(0))


def test_prefixes_decode_to_the_lower_resolutions(images):
    x, lr = images

    @nnx.jit  # one compilation for every decode (each alone costs one)
    def run(m, x, lr):
        codes = m.tokenize(x)
        decodes = [m.decode_prefix(codes[:k], 8, p) for k, p in ((2, 2), (3, 4), (4, 8))]
        return codes, decodes, m.tokenize(lr)

    codes, decodes, lr_codes = run(_model(), x, lr)
    assert [c.shape for c in codes] == [(4, p, p) for p in (1, 2, 4, 8)]
    # x1 (the LR size), x2, x4
    assert [d.shape for d in decodes] == [(4, out, out, 3) for out in (8, 16, 32)]
    # the LR image's own tokenization: the first two scales
    assert [c.shape for c in lr_codes] == [(4, 1, 1), (4, 2, 2)]
    assert token_overlap(lr_codes, lr_codes) == 1.0
    assert 0 <= token_overlap(codes[:2], lr_codes) <= 1


@pytest.mark.parametrize("variant", ["standard", "hit"])
def test_both_variants_lower_their_loss(images, variant):
    x, lr = images
    model = _model()
    graphdef, params = nnx.split(model, nnx.Param)
    tx = optax.adam(3e-3)
    opt = tx.init(params)

    @jax.jit
    def step(params, opt):
        def loss_fn(p):
            return tokenizer_loss(nnx.merge(graphdef, p), x, lr, variant)

        (loss, parts), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
        up, opt = tx.update(g, opt, params)
        return optax.apply_updates(params, up), opt, loss, parts

    first = None
    for _ in range(30):
        params, opt, loss, parts = step(params, opt)
        first = float(parts["rec"]) if first is None else first
    # the reconstruction improves (HIT's overlap term chases targets that move with the model)
    assert float(parts["rec"]) < first
    assert ("overlap" in parts) == (variant == "hit") and np.isfinite(float(loss))
    with pytest.raises(ValueError, match="not 'standard' or 'hit'"):
        tokenizer_loss(model, x, lr, "other")
    with pytest.raises(ValueError, match="side in"):
        model.rq(jnp.zeros((1, 3, 3, 8)))
