"""The SR pairs: packaged photographs only, held-out test images, seeded crops, the degradation."""

import jax
import jax.numpy as jnp
import numpy as np

from projects.var_sr.data import (
    SKLEARN_PHOTOS,
    TEST_IMAGES,
    TRAIN_IMAGES,
    degrade,
    grid_crops,
    load_photo,
    random_crops,
    sklearn_photo,
)


def test_photos_load_as_rgb_and_test_images_are_held_out():
    assert not set(TRAIN_IMAGES) & set(TEST_IMAGES) and len(TEST_IMAGES) == 4
    for name in ("camera", "logo", "china"):  # grey, RGBA and scikit-learn's JPEG
        img = load_photo(name)
        assert img.ndim == 3 and img.shape[-1] == 3 and img.dtype == np.float32
        assert 0 <= img.min() and img.max() <= 1


def test_sklearn_photos_are_the_arrays_of_its_own_loader():
    import sklearn.datasets

    bunch = sklearn.datasets.load_sample_images()
    for name in SKLEARN_PHOTOS:
        (want,) = [im for f, im in zip(bunch.filenames, bunch.images) if f.endswith(f"{name}.jpg")]
        np.testing.assert_array_equal(sklearn_photo(name), want)


def test_crops_are_seeded_and_taken_from_the_named_images():
    a = random_crops(TRAIN_IMAGES[:3], 8, 32, seed=0)
    np.testing.assert_array_equal(a, random_crops(TRAIN_IMAGES[:3], 8, 32, seed=0))
    assert not np.array_equal(a, random_crops(TRAIN_IMAGES[:3], 8, 32, seed=1))
    t = grid_crops(("camera",), 4, 32)
    img = load_photo("camera")
    np.testing.assert_array_equal(t[0], img[:32, :32])
    np.testing.assert_array_equal(t[3], img[-32:, -32:])


def test_degradation_is_a_bicubic_x4_with_small_noise():
    flat = jnp.full((3, 32, 32, 3), 0.5)
    lr = degrade(flat, jax.random.key(0))
    assert lr.shape == (3, 8, 8, 3)
    assert abs(float(lr.mean()) - 0.5) < 2e-3 and 0.008 < float(lr.std()) < 0.012
    clean = degrade(flat, jax.random.key(0), noise=0.0)
    np.testing.assert_allclose(clean, 0.5, atol=1e-6)
