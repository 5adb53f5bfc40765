"""The synthetic five-modality generator and the real-crop source (spec sec. 5 and 6).

The key test: on clean images every fine label is recovered exactly by a hand-coded rule
(connected components, a column profile, region properties), so the labels mean what they say.
"""

import numpy as np
import pytest
from scipy import ndimage
from skimage.measure import regionprops

from projects.m_idol.generator import MODALITIES, NUM_FINE, generate
from projects.m_idol.real_crops import REAL_SOURCES, real_crops

EIGHT = np.ones((3, 3), int)  # 8-connectivity: diagonal neighbours join a component


def _components(mask: np.ndarray) -> int:
    return ndimage.label(mask, structure=EIGHT)[1]


def _xray_rule(img: np.ndarray) -> int:
    return _components(img.mean(-1) > 0.5) - 1  # background <= 0.45; blob plateaus reach >= 0.8


def _fundus_rule(img: np.ndarray) -> int:
    return _components(img[..., 2] > 0.45)  # only the yellow-white spots have a high blue


def _oct_rule(img: np.ndarray) -> int:
    column = img.mean(-1)[:, 16] > 0.45  # bands >= 0.6 x tint, background <= 0.15
    return int(column[0]) + int(np.sum(column[1:] & ~column[:-1])) - 3  # dark -> bright steps


def _dermoscopy_rule(img: np.ndarray) -> int:
    labels, count = ndimage.label(img.mean(-1) < 0.5, structure=EIGHT)  # lesion ~0.3, skin ~0.6+
    if count == 2:
        return 3  # two-lobed
    (region,) = regionprops(labels)
    if region.solidity < 0.8:
        return 2  # irregular: star-shaped outline, far from convex
    return 1 if region.eccentricity > 0.75 else 0  # elongated (ratio >= 2) vs round (<= 1.1)


def _pathology_rule(img: np.ndarray) -> int:
    return (_components(img.mean(-1) < 0.45) - 1) // 4  # level l has 4l + 2 ... 4l + 4 nuclei


RULES = dict(
    xray=_xray_rule,
    fundus=_fundus_rule,
    oct=_oct_rule,
    dermoscopy=_dermoscopy_rule,
    pathology=_pathology_rule,
)


@pytest.fixture(scope="module")
def clean():
    return generate(100, seed=3, clean=True)


def test_same_seed_same_arrays_other_seed_differs():
    a, b, c = generate(8, seed=0), generate(8, seed=0), generate(8, seed=1)
    for field in ("x", "modality", "fine"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert not np.array_equal(a.x, c.x)
    assert not np.array_equal(a.fine, c.fine)


def test_shapes_dtypes_ranges():
    n = 12
    for data in (generate(n, seed=0), generate(n, seed=0, clean=True)):
        assert data.x.shape == (5 * n, 32, 32, 3) and data.x.dtype == np.float32
        assert data.modality.shape == data.fine.shape == (5 * n,)
        assert data.modality.dtype == data.fine.dtype == np.int32
        assert 0.0 <= data.x.min() and data.x.max() <= 1.0
        np.testing.assert_array_equal(np.bincount(data.modality), [n] * 5)
        assert set(np.unique(data.fine)) <= set(range(NUM_FINE))


def test_every_class_present_and_balanced():
    data = generate(200, seed=7)
    for m in range(len(MODALITIES)):
        counts = np.bincount(data.fine[data.modality == m], minlength=NUM_FINE)
        np.testing.assert_array_equal(counts, [50] * NUM_FINE)  # an exact balance by design


def test_clean_images_are_the_unperturbed_ones():
    plain = generate(6, seed=2, noise=0.0, contrast=(1.0, 1.0))
    clean = generate(6, seed=2, clean=True)
    np.testing.assert_allclose(plain.x, clean.x, atol=1e-6)  # x - mean + mean: a few float32 ulps
    noisy = generate(6, seed=2)
    np.testing.assert_array_equal(noisy.fine, clean.fine)
    assert 0.02 < np.abs(noisy.x - clean.x).mean() < 0.2


@pytest.mark.parametrize("name", MODALITIES)
def test_fine_label_recovered_exactly_by_hand_coded_rule(clean, name):
    m = MODALITIES.index(name)
    x, fine = clean.x[clean.modality == m], clean.fine[clean.modality == m]
    predicted = np.array([RULES[name](img) for img in x])
    np.testing.assert_array_equal(predicted, fine)  # accuracy 1.0 on 100 clean images


def _chromaticity(x: np.ndarray) -> np.ndarray:
    colour = x.mean(axis=(1, 2))  # [n, 3] mean colour
    return colour / colour.sum(-1, keepdims=True)


def test_modality_is_trivially_separable_by_mean_colour(clean):
    """The spec's warning: modality id is easy. The nearest class mean of the mean colour's
    chromaticity (means from another seed) names every clean image's modality."""
    ref = generate(40, seed=11, clean=True)
    means = np.stack([_chromaticity(ref.x[ref.modality == m]).mean(0) for m in range(5)])
    dist = ((_chromaticity(clean.x)[:, None] - means[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(dist.argmin(1), clean.modality)


def test_real_crops_deterministic_shapes_ranges_sources():
    a, b = real_crops(6, seed=0), real_crops(6, seed=0)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.source, b.source)
    assert not np.array_equal(a.x, real_crops(6, seed=1).x)
    assert a.x.shape == (6 * len(REAL_SOURCES), 32, 32, 3) and a.x.dtype == np.float32
    assert a.source.dtype == np.int32
    assert 0.0 <= a.x.min() and a.x.max() <= 1.0
    np.testing.assert_array_equal(np.bincount(a.source), [6] * len(REAL_SOURCES))
    assert real_crops(2, seed=0, size=16).x.shape == (2 * len(REAL_SOURCES), 16, 16, 3)


def test_real_crop_larger_than_an_image_names_it():
    with pytest.raises(ValueError, match="microaneurysms"):  # 102 x 102
        real_crops(1, seed=0, size=200)
