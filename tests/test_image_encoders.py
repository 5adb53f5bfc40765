"""The small image encoders: shapes, named layers, and what their input checks refuse."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from shared.models.image_encoders import ConvEncoder, ViTEncoder, image_encoder

# Jitted whole: op by op, every eager convolution compiles on its own (most of these tests' time).
_layers = nnx.jit(lambda enc, x: enc.layer_features(x))
_call = nnx.jit(lambda enc, x: enc(x))


@pytest.mark.parametrize("size,channels", [(28, 1), (32, 3)])
def test_cnn_maps_images_to_features_and_names_every_layer(size, channels):
    enc = ConvEncoder(size, channels, widths=(8, 16, 16), dim=24, rngs=nnx.Rngs(0))
    x = jax.random.uniform(jax.random.key(1), (5, size, size, channels))
    layers = _layers(enc, x)  # jitted: keys come back sorted, which is the layer order here
    assert list(layers) == ["conv0", "conv1", "conv2", "proj"]
    side = (size + 3) // 4  # two stride-2 SAME convolutions: ceil twice
    assert layers["conv0"].shape == (5, size, size, 8)
    assert layers["conv2"].shape == (5, side, side, 16)
    z = _call(enc, x)
    np.testing.assert_allclose(z, layers["proj"], rtol=1e-6, atol=1e-7)
    assert z.shape == (5, 24)
    # each image is encoded alone: the batch does not mix
    np.testing.assert_allclose(_call(enc, x[:1]), z[:1], rtol=1e-5, atol=1e-6)


def test_vit_patches_are_row_major_and_features_have_dim():
    enc = ViTEncoder(8, 2, patch=4, dim=12, depth=2, heads=2, width=16, rngs=nnx.Rngs(0))
    x = jnp.arange(2 * 8 * 8 * 2, dtype=jnp.float32).reshape(2, 8, 8, 2)
    p = enc.patches(x)
    assert p.shape == (2, 4, 32)
    # patch 1 is the top-right 4x4 block, pixels in row-major order with channels innermost
    np.testing.assert_array_equal(p[0, 1], np.asarray(x[0, :4, 4:]).reshape(-1))
    layers = enc.layer_features(x)  # eager: a jitted dict comes back with sorted keys
    assert list(layers) == ["embed", "block0", "block1", "proj"]
    assert layers["block1"].shape == (2, 5, 16) and _call(enc, x).shape == (2, 12)


def test_bad_shapes_and_kinds_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"built for \[28, 28, 1\]"):
        _call(ConvEncoder(28, 1, rngs=nnx.Rngs(0)), jnp.zeros((1, 32, 32, 1)))
    with pytest.raises(ValueError, match="not a multiple of patch"):
        ViTEncoder(30, 1, patch=4, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="'cnn' or 'vit'"):
        image_encoder("resnet", 28, 1, 8, rngs=nnx.Rngs(0))
    assert isinstance(image_encoder("vit", 28, 1, 8, rngs=nnx.Rngs(0), patch=7), ViTEncoder)
