"""The evaluation metrics on features of known geometry (spec sec. 6) and the fixed split."""

import numpy as np
import pytest

from projects.m_idol.evaluate import representation_metrics, split


def _labels(n_per=100):
    modality = np.repeat(np.arange(5), n_per)
    fine = np.tile(np.arange(4), 5 * n_per // 4)
    return modality, fine


def test_split_is_a_fixed_stratified_80_20():
    modality, fine = _labels()
    train, test = split(modality, fine, seed=0)
    assert len(test) == 100 and len(np.intersect1d(train, test)) == 0
    assert len(train) + len(test) == len(modality)
    for m in range(5):
        for c in range(4):
            assert np.sum((modality[test] == m) & (fine[test] == c)) == 5
    np.testing.assert_array_equal(split(modality, fine, seed=0)[1], test)
    assert not np.array_equal(split(modality, fine, seed=1)[1], test)


def test_separated_modalities_give_silhouette_near_one_and_isotropic_ones_full_erank():
    rng = np.random.default_rng(0)
    modality, fine = _labels(200)
    train, test = split(modality, fine, 0)
    dim = 32
    # one far-away direction per modality: cosine distances ~0.07 within, ~1 across
    z = 30 * np.eye(dim)[modality] + rng.normal(size=(1000, dim))
    out = representation_metrics(z, modality, fine, train, test, cs=(1.0,))
    assert out["silhouette"] > 0.9 and out["probe_modality"] == 1.0
    # plus the fine class along an axis of its own in every modality
    z = z + 10 * np.eye(dim)[5 + 4 * modality + fine]
    out = representation_metrics(z, modality, fine, train, test, cs=(1.0,))
    assert out["probe_fine_mean"] > 0.95
    iso = rng.normal(size=(1000, dim))  # isotropic in every modality: eRank ~ the dimension
    out = representation_metrics(iso, modality, fine, train, test, cs=(1.0,))
    assert out["erank"] == pytest.approx(dim, rel=0.05)
    assert abs(out["silhouette"]) < 0.05 and out["probe_modality"] < 0.4
