"""Augmentations: seeded, shape-keeping, and each doing exactly its one thing."""

import jax
import jax.numpy as jnp
import numpy as np

from shared.data.augment import add_trigger, augment, color_jitter, random_crop, random_flip


def _images(n=6, h=7, w=5, c=2):
    return jax.random.uniform(jax.random.key(0), (n, h, w, c))


def test_crop_is_a_shift_with_zero_fill_and_reproducible():
    x = _images()
    k = jax.random.key(3)
    out = random_crop(k, x, pad=2)
    np.testing.assert_array_equal(out, random_crop(k, x, pad=2))
    padded = np.pad(np.asarray(x), ((0, 0), (2, 2), (2, 2), (0, 0)))
    for i in range(len(x)):  # every output is one of the 25 windows of the padded image
        wins = [padded[i, a:a + 7, b:b + 5] for a in range(5) for b in range(5)]
        assert any(np.array_equal(out[i], w) for w in wins)
    np.testing.assert_array_equal(random_crop(k, x, pad=0), x)


def test_flip_mirrors_whole_images_only():
    x = _images(n=64)
    out = np.asarray(random_flip(jax.random.key(1), x))
    flipped = [np.array_equal(o, np.asarray(a)[:, ::-1]) for o, a in zip(out, x)]
    kept = [np.array_equal(o, np.asarray(a)) for o, a in zip(out, x)]
    assert all(f or k for f, k in zip(flipped, kept)) and 10 < sum(flipped) < 54


def test_jitter_stays_in_range_and_zero_strength_is_identity():
    x = _images()
    out = color_jitter(jax.random.key(2), x, 0.5, 0.5)
    assert out.shape == x.shape and 0 <= float(out.min()) and float(out.max()) <= 1
    assert not np.allclose(out, x)
    np.testing.assert_allclose(color_jitter(jax.random.key(2), x, 0.0, 0.0), x, atol=1e-6)


def test_trigger_is_idempotent_and_touches_only_the_corner():
    x = _images(c=1)
    t = add_trigger(x, size=3)
    np.testing.assert_array_equal(add_trigger(t, size=3), t)
    np.testing.assert_array_equal(t[:, -3:, -3:], 1.0)
    changed = np.asarray(t != x).any(axis=(0, 3))
    mask = np.zeros((7, 5), bool)
    mask[-3:, -3:] = True
    assert not changed[~mask].any()


def test_augment_composes_and_is_seeded():
    x = _images()
    a = augment(jax.random.key(4), x, pad=1, flip=True, jitter=0.1)
    np.testing.assert_array_equal(a, augment(jax.random.key(4), x, pad=1, flip=True, jitter=0.1))
    assert a.shape == x.shape
    assert not np.array_equal(a, augment(jax.random.key(5), x, pad=1, flip=True, jitter=0.1))
    np.testing.assert_array_equal(augment(jax.random.key(4), x, pad=0), jnp.asarray(x))
