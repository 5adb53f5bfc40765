"""PSNR and SSIM against scikit-image's implementations and their closed-form edge cases."""

import jax
import numpy as np
import pytest
import skimage.metrics

from shared.metrics.image import gaussian_window, psnr, rgb_to_y, ssim


@pytest.fixture(autouse=True)
def _float64():
    """Compared with scikit-image in float64 (inside these tests only)."""
    with jax.enable_x64(True):
        yield


def _pair(shape=(2, 24, 20, 3), noise=0.1, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, shape)
    return x, np.clip(x + noise * rng.normal(size=shape), 0, 1)


def test_psnr_matches_scikit_image_and_the_closed_forms():
    x, y = _pair()
    for b in range(2):
        want = skimage.metrics.peak_signal_noise_ratio(x[b], y[b], data_range=1.0)
        np.testing.assert_allclose(psnr(x, y)[b], want, rtol=1e-10)
    z = np.zeros((4, 4, 1))
    assert float(psnr(z, z + 0.1)) == pytest.approx(20.0)  # MSE = 0.01 -> 20 dB
    assert float(psnr(z, z)) == np.inf  # identical -> +inf, no NaN
    assert float(psnr(z, z + 25.5, data_range=255.0)) == pytest.approx(20.0)


@pytest.mark.parametrize("shape", [(3, 24, 20, 3), (1, 13, 11, 1)])
def test_ssim_matches_scikit_image_gaussian_ssim(shape):
    x, y = _pair(shape, noise=0.2, seed=1)
    got = np.asarray(ssim(x, y))
    assert got.dtype == np.float64
    np.testing.assert_allclose(ssim(x.astype(np.float32), y.astype(np.float32)), got, rtol=1e-5)
    for b in range(shape[0]):
        want = skimage.metrics.structural_similarity(
            x[b], y[b], data_range=1.0, channel_axis=-1, gaussian_weights=True, sigma=1.5,
            use_sample_covariance=False,
        )  # fmt: skip
        np.testing.assert_allclose(got[b], want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ssim(x, x), 1.0, rtol=1e-12)
    assert np.all(got < 1)


def test_window_luma_and_border_crop():
    g = gaussian_window()
    assert g.shape == (11,) and g.sum() == pytest.approx(1.0) and np.argmax(g) == 5
    np.testing.assert_allclose(rgb_to_y(np.ones((1, 1, 3))), 235 / 255, rtol=1e-6)
    np.testing.assert_allclose(rgb_to_y(np.zeros((1, 1, 3))), 16 / 255, rtol=1e-6)
    x, y = _pair((12, 12, 1))
    y = y.copy()
    y[:2] = x[:2] + 0.5  # damage only the border rows
    np.testing.assert_allclose(psnr(x, y, border=2), psnr(x[2:-2, 2:-2], y[2:-2, 2:-2]))
    with pytest.raises(ValueError, match="leaves no pixel"):
        psnr(x, y, border=6)
    with pytest.raises(ValueError, match="smaller than the 11-tap window"):
        ssim(x[:8], y[:8])
