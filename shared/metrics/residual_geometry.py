"""Geometry of a residual update: how a sublayer's output ΔX relates to the stream X it is added to.

For one sample, X [n, d] is the residual stream entering a sublayer (tokens as rows, before any
norm) and ΔX [n, d] the update it adds back. Reconstruction (the Lost-in-Attention paper's exact
formulas are not published here, ../papers/lost_in_attention.md): standard quantities that
implement its description, all in float64 NumPy:
  eRank(M)  exp of the entropy of M's singular values normalized by their sum (not squared)
  ΔeRank    eRank(X + ΔX) - eRank(X)
  ρ         ‖ΔX V_k V_kᵀ‖² / ‖ΔX‖², V_k the top-k right singular vectors of X holding 99% of ‖X‖²
  overlap   mean cos² of the principal angles between span(V_k) and ΔX's top-j subspace (same rule)
  magnitude ‖ΔX‖ / ‖X‖ and the mean over tokens of cos(Δx_i, x_i)
No centring by default (centre=True is the robustness check).
"""

from __future__ import annotations

import numpy as np

from shared.metrics.representation import effective_rank, erank_of_singular_values

ENERGY = 0.99  # share of ‖X‖_F² the principal subspace holds


def _f64(m: np.ndarray, center: bool = False) -> np.ndarray:
    m = np.asarray(m, np.float64)
    return m - m.mean(0) if center else m


def energy_basis(m: np.ndarray, energy: float = ENERGY, center: bool = False) -> np.ndarray:
    """[d, k]: the top-k right singular vectors of m [n, d], k the fewest holding `energy` of
    ‖m‖_F² (k = 0 for a zero matrix)."""
    _, s, vt = np.linalg.svd(_f64(m, center), full_matrices=False)
    return _basis(s, vt, energy)


def _basis(s: np.ndarray, vt: np.ndarray, energy: float) -> np.ndarray:
    power = s**2
    total = power.sum()
    if total <= 0:
        return np.zeros((vt.shape[1], 0))
    k = int(np.searchsorted(np.cumsum(power) / total, energy - 1e-12) + 1)
    return vt[: min(k, len(s))].T


def delta_erank(x: np.ndarray, dx: np.ndarray, center: bool = False) -> float:
    """eRank(X + ΔX) - eRank(X)."""
    x, dx = _f64(x), _f64(dx)
    return effective_rank(x + dx, center=center) - effective_rank(x, center=center)


def spectral_entropy(m: np.ndarray, center: bool = False) -> float:
    """Entropy of the sum-normalized singular values over log(rank) (1 = flat, 0 = rank one)."""
    s = np.linalg.svd(_f64(m, center), compute_uv=False)
    s = s[s > s.max() * 1e-12] if s.size and s.max() > 0 else s[:0]
    if len(s) < 2:
        return 0.0
    p = s / s.sum()
    return float(-(p * np.log(p)).sum() / np.log(len(s)))


def support(x: np.ndarray, dx: np.ndarray, energy: float = ENERGY, center: bool = False) -> float:
    """ρ: the share of ‖ΔX‖_F² inside X's principal row subspace (1 - ρ is the innovation).
    NaN for ΔX = 0."""
    return _in_span(_f64(dx), lambda: energy_basis(x, energy, center))


def _in_span(dx: np.ndarray, basis) -> float:
    """Share of ‖dx‖_F² inside span(basis()) (a [d, k] orthonormal basis, built only when dx is
    not zero); NaN for dx = 0."""
    total = float((dx**2).sum())
    if total == 0:
        return float("nan")
    return float(((dx @ basis()) ** 2).sum() / total)


def subspace_overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Mean cos² of the principal angles between span(a) and span(b) (orthonormal columns
    [d, ka], [d, kb]), over min(ka, kb) angles: 1 if one holds the other, 0 if orthogonal."""
    k = min(a.shape[1], b.shape[1])
    if k == 0:
        return float("nan")
    cos = np.linalg.svd(a.T @ b, compute_uv=False)[:k]
    return float(np.mean(np.clip(cos, 0.0, 1.0) ** 2))


def update_overlap(x: np.ndarray, dx: np.ndarray, energy: float = ENERGY) -> float:
    """Grassmann overlap of X's and ΔX's principal row subspaces (same energy rule)."""
    return subspace_overlap(energy_basis(x, energy), energy_basis(dx, energy))


def norm_ratio(x: np.ndarray, dx: np.ndarray) -> float:
    """‖ΔX‖_F / ‖X‖_F."""
    return float(np.linalg.norm(_f64(dx)) / np.linalg.norm(_f64(x)))


def mean_token_cosine(x: np.ndarray, dx: np.ndarray) -> float:
    """Mean over tokens of cos(Δx_i, x_i) (tokens with a zero vector are skipped)."""
    x, dx = _f64(x), _f64(dx)
    nx, nd = np.linalg.norm(x, axis=1), np.linalg.norm(dx, axis=1)
    ok = (nx > 0) & (nd > 0)
    if not ok.any():
        return float("nan")
    return float(np.mean((x[ok] * dx[ok]).sum(1) / (nx[ok] * nd[ok])))


def update_geometry(x: np.ndarray, dx: np.ndarray, center: bool = False) -> dict[str, float]:
    """All measurements of one (X, ΔX) pair, plus k (the principal dimension of X); with
    center=True also "rho_c" and "delta_erank_c", ρ and ΔeRank of the row-centred matrices (the
    spec's robustness check). The same values as the functions above, from one SVD per matrix
    (the scans measure thousands of pairs)."""
    x, dx = _f64(x), _f64(dx)
    _, sx, vx = np.linalg.svd(x, full_matrices=False)
    _, sd, vd = np.linalg.svd(dx, full_matrices=False)
    bx = _basis(sx, vx, ENERGY)
    scale = np.abs(x).max(initial=0)  # effective_rank's zero-data threshold for X
    out = {
        "rho": _in_span(dx, lambda: bx),
        "delta_erank": effective_rank(x + dx, center=False) - erank_of_singular_values(sx, scale),
        "overlap": subspace_overlap(bx, _basis(sd, vd, ENERGY)),
        "norm_ratio": norm_ratio(x, dx),
        "cosine": mean_token_cosine(x, dx),
        "k": float(bx.shape[1]),
    }
    if center:
        _, sc, vc = np.linalg.svd(x - x.mean(0), full_matrices=False)
        out["rho_c"] = _in_span(dx, lambda: _basis(sc, vc, ENERGY))
        out["delta_erank_c"] = effective_rank(x + dx) - erank_of_singular_values(sc, scale)
    return out
