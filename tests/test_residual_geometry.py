"""Residual-update geometry (shared.metrics.residual_geometry) against closed forms."""

import numpy as np
import pytest

from shared.metrics.representation import effective_rank
from shared.metrics.residual_geometry import (
    delta_erank,
    energy_basis,
    mean_token_cosine,
    norm_ratio,
    spectral_entropy,
    subspace_overlap,
    support,
    update_geometry,
    update_overlap,
)

RNG = np.random.default_rng(0)


def _low_rank(n=12, d=20, r=4):
    return RNG.normal(size=(n, r)) @ RNG.normal(size=(r, d))


def test_effective_rank_closed_forms():
    for n in (1, 3, 7):
        assert effective_rank(np.eye(n), center=False) == pytest.approx(n, rel=1e-12)
    m = np.outer(RNG.normal(size=6), RNG.normal(size=9))
    assert effective_rank(m, center=False) == pytest.approx(1.0, rel=1e-9)
    x = RNG.normal(size=(8, 5))
    for c in (-3.0, 1e-3, 250.0):
        assert effective_rank(c * x, center=False) == pytest.approx(
            effective_rank(x, center=False), rel=1e-12
        )
    assert effective_rank(np.zeros((4, 3)), center=False) == 0.0
    s = np.array([3.0, 2.0, 1.0])  # closed form from the singular values
    p = s / s.sum()
    diag = np.diag(s)
    assert effective_rank(diag, center=False) == pytest.approx(np.exp(-(p * np.log(p)).sum()))
    assert spectral_entropy(np.eye(4)) == pytest.approx(1.0)
    assert spectral_entropy(m) == 0.0


def test_energy_basis_holds_the_energy():
    x = np.diag([10.0, 2.0, 0.1, 0.0])
    assert energy_basis(x).shape[1] == 2  # 100 / 104.01 < 0.99 <= 104 / 104.01
    assert energy_basis(x, energy=1.0).shape[1] == 3
    assert energy_basis(np.zeros((3, 4))).shape[1] == 0


def test_support_of_token_mixing_and_orthogonal_updates():
    x = _low_rank()
    mix = RNG.normal(size=(12, 12)) @ x  # ΔX = C X: inside the row space of X
    assert support(x, mix, energy=1.0) == pytest.approx(1.0, abs=1e-10)
    v = energy_basis(x, energy=1.0)
    orth = RNG.normal(size=(12, 20))
    orth = orth - orth @ v @ v.T  # orthogonal to the row space of X
    assert support(x, orth, energy=1.0) == pytest.approx(0.0, abs=1e-12)
    half = mix / np.linalg.norm(mix) + orth / np.linalg.norm(orth)  # equal energies
    assert support(x, half, energy=1.0) == pytest.approx(0.5, abs=1e-10)
    assert np.isnan(support(x, np.zeros_like(x)))


def test_principal_angle_overlap():
    q, _ = np.linalg.qr(RNG.normal(size=(10, 6)))
    a, b = q[:, :3], q[:, 3:]
    assert subspace_overlap(a, a) == pytest.approx(1.0)
    assert subspace_overlap(a, a @ np.linalg.qr(RNG.normal(size=(3, 3)))[0]) == pytest.approx(1.0)
    assert subspace_overlap(a, b) == pytest.approx(0.0, abs=1e-12)
    # one shared direction of three: cos² = (1, 0, 0)
    assert subspace_overlap(a, np.c_[a[:, :1], b[:, :2]]) == pytest.approx(1 / 3)
    x = _low_rank()
    assert update_overlap(x, 2 * x) == pytest.approx(1.0)


def test_magnitudes_and_delta_erank():
    x = RNG.normal(size=(5, 7))
    assert norm_ratio(x, 0.5 * x) == pytest.approx(0.5)
    assert mean_token_cosine(x, 3 * x) == pytest.approx(1.0)
    assert mean_token_cosine(x, -x) == pytest.approx(-1.0)
    assert delta_erank(x, x) == pytest.approx(0.0, abs=1e-12)  # scaling keeps eRank
    e = np.zeros((4, 4))
    e[0, 0] = 1.0
    assert delta_erank(e, np.diag([0, 1.0, 1.0, 1.0])) == pytest.approx(3.0)
    x, dx = _low_rank(), RNG.normal(size=(12, 20))
    g = update_geometry(x, dx)
    assert set(g) == {"rho", "delta_erank", "overlap", "norm_ratio", "cosine", "k"}
    assert 0.0 <= g["rho"] <= 1.0 and g["k"] == 4


def test_update_geometry_equals_the_separate_measurements():
    # one SVD per matrix inside update_geometry; the values are the single functions'
    for x, dx in [(_low_rank(), RNG.normal(size=(12, 20))), (RNG.normal(size=(9, 6)), None)]:
        dx = 0.3 * x @ RNG.normal(size=(6, 6)) if dx is None else dx
        g = update_geometry(x, dx, center=True)
        want = {
            "rho": support(x, dx),
            "delta_erank": delta_erank(x, dx),
            "overlap": update_overlap(x, dx),
            "norm_ratio": norm_ratio(x, dx),
            "cosine": mean_token_cosine(x, dx),
            "k": energy_basis(x).shape[1],
            "rho_c": support(x, dx, center=True),
            "delta_erank_c": delta_erank(x, dx, center=True),
        }
        assert g == pytest.approx(want, rel=1e-12, abs=1e-12)
    assert np.isnan(update_geometry(x, np.zeros_like(x))["rho"])
