"""Seeded five-"modality" synthetic 32x32 images with a fine class in each modality (spec sec. 5).

`generate(n_per_modality, seed)` returns `SyntheticImages(x, modality, fine)`:
  x:        [5 * n, 32, 32, 3] float32 in [0, 1]
  modality: [5 * n] int32, index into MODALITIES (modality-major rows: n x-rays, n fundus, ...)
  fine:     [5 * n] int32 in [0, 4), named by FINE_CLASSES[MODALITIES[m]]

Every modality draws its fine classes as an exact balance (n // 4 each, the remainder spread over
the first classes) in a seeded random order. The objects that carry a count (x-ray blobs, fundus
spots, pathology nuclei) are placed with a minimum centre distance so that on clean images no two
of them touch, even diagonally: the count is recoverable by connected components (8-connectivity),
which the tests check with hand-coded rules. Noise and contrast are drawn from their own stream, so
`clean=True` gives exactly the images that `clean=False` perturbs.

Pixel (i, j) has its centre at (y, x) = (i, j); every shape is rasterized by testing pixel centres.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

SIZE = 32
MODALITIES = ("xray", "fundus", "oct", "dermoscopy", "pathology")
NUM_FINE = 4
FINE_CLASSES = {
    "xray": ("1 blob", "2 blobs", "3 blobs", "4 blobs"),
    "fundus": ("0 spots", "1 spot", "2 spots", "3 spots"),
    "oct": ("3 bands", "4 bands", "5 bands", "6 bands"),
    "dermoscopy": ("round", "elongated", "irregular", "two-lobed"),
    "pathology": ("density 0", "density 1", "density 2", "density 3"),
}
# Pathology nuclei count per density level: level l has 4l + 2 ... 4l + 4 nuclei.
NUCLEI_PER_LEVEL = tuple((4 * level + 2, 4 * level + 4) for level in range(NUM_FINE))
# OCT is drawn grey with this faint blue cast (as some devices' false-colour displays) so that it
# does not share x-ray's neutral grey; every modality then has its own mean chromaticity.
OCT_TINT = np.array([0.82, 0.9, 1.0], np.float32)

_YY, _XX = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)  # [32, 32] pixel-centre coordinates
_CENTRE = (SIZE - 1) / 2.0


class SyntheticImages(NamedTuple):
    x: np.ndarray  # [n, 32, 32, 3] float32 in [0, 1]
    modality: np.ndarray  # [n] int32, index into MODALITIES
    fine: np.ndarray  # [n] int32 in [0, NUM_FINE)


def _col(a: np.ndarray) -> np.ndarray:
    """[n] -> [n, 1, 1] float32, to broadcast one value per image against [n, 32, 32] grids."""
    return np.asarray(a, np.float32)[:, None, None]


def _separated_points(
    rng: np.random.Generator, k: np.ndarray, k_max: int, low: float, high: float, min_dist: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per image i, k[i] <= k_max points uniform in [low, high]^2, pairwise >= min_dist apart.

    Returns points [n, k_max, 2] (y, x) and active [n, k_max] (slot j < k[i]). Random sequential
    addition, run on all images at once: each image's candidates are accepted in order when far
    enough from those it accepted already. Images whose batch runs out draw a fresh batch (the
    settings below stay well under the packing limit, so few ever do).
    """
    n = len(k)
    points = np.zeros((n, k_max, 2))
    todo = np.arange(n)
    num_cand = max(32, 8 * k_max)
    for _ in range(100):
        if todo.size == 0:
            break
        cand = rng.uniform(low, high, size=(2, todo.size, num_cand))  # (y, x) of candidates
        blocked = np.zeros((todo.size, num_cand), bool)
        count = np.zeros(todo.size, int)
        chosen = np.zeros((todo.size, k_max, 2))
        need = k[todo]
        for c in range(num_cand):
            take = np.flatnonzero(~blocked[:, c] & (count < need))
            if take.size == 0:
                continue
            chosen[take, count[take]] = cand[:, take, c].T
            count[take] += 1
            dy = cand[0, take, c:] - cand[0, take, c, None]
            dx = cand[1, take, c:] - cand[1, take, c, None]
            blocked[take, c:] |= dy * dy + dx * dx < min_dist * min_dist
        done = count >= need
        points[todo[done]] = chosen[done]
        todo = todo[~done]
    if todo.size:
        raise RuntimeError(
            f"could not place up to {k_max} points {min_dist} apart in [{low}, {high}]^2"
        )
    return points, np.arange(k_max) < k[:, None]


def _stamp_discs(
    img: np.ndarray, centres: np.ndarray, radii: np.ndarray, active: np.ndarray, colours: np.ndarray
) -> np.ndarray:
    """img [n, 32, 32, 3] with the pixel centres within radii [n, k] (<= 2) of centres [n, k, 2]
    set to colours [n, k, 3], for the active [n, k] discs; the discs must not overlap.

    Only the 5x5 pixels around each rounded centre can lie within 2 px of it, so the disc test runs
    on those alone (a full-image test per disc is ~40x the work).
    """
    if radii.size and radii.max() > 2:
        raise ValueError(f"_stamp_discs handles radii <= 2, got {radii.max()}")
    n, k = radii.shape
    oy, ox = (o.ravel() for o in np.meshgrid(np.arange(-2, 3), np.arange(-2, 3), indexing="ij"))
    base = np.round(centres).astype(int)
    py, px = base[..., 0, None] + oy, base[..., 1, None] + ox  # [n, k, 25]
    d2 = (py - centres[..., 0, None]) ** 2 + (px - centres[..., 1, None]) ** 2
    hit = (d2 <= radii[..., None] ** 2) & active[..., None]
    hit &= (py >= 0) & (py < SIZE) & (px >= 0) & (px < SIZE)
    ni, kj, _ = np.nonzero(hit)
    img = img.copy()
    img[ni, py[hit], px[hit]] = colours[ni, kj]
    return img


def _rotated(cy: np.ndarray, cx: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (u, v) [n, 32, 32] in frames centred at (cy, cx) [n], u along angle phi."""
    dy, dx = _YY - _col(cy), _XX - _col(cx)
    cos, sin = np.cos(_col(phi)), np.sin(_col(phi))
    return cos * dx + sin * dy, -sin * dx + cos * dy


def _paint(img: np.ndarray, mask: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """img [n, 32, 32, 3] with mask [n, 32, 32] pixels set to colour [n, 3] (or [n, 32, 32, 3])."""
    colour = colour[:, None, None, :] if colour.ndim == 2 else colour
    return np.where(mask[..., None], colour.astype(np.float32), img)


def _xray(rng: np.random.Generator, fine: np.ndarray) -> np.ndarray:
    """X-ray: grey linear gradient (random direction, levels within [0.05, 0.45]) and fine + 1
    bright elliptical blobs.

    Varies: gradient direction and levels; per blob the centre, semi-axes a in [2.5, 4.5] and
    b in [2, a], orientation, peak brightness in [0.8, 1]. A blob is a plateau with a soft rim,
    peak * clip(1.5 (1 - r^2), 0, 1) in elliptical radius r, so it exceeds 0.5 on an inner ellipse
    of semi-axes >= 0.76 b while the background stays <= 0.45. Centres are >= 10.5 apart (two
    largest semi-axes + 1.5), so blobs never touch.
    Label: fine = number of blobs - 1 (4 classes).
    """
    n = len(fine)
    theta = _col(rng.uniform(0, 2 * np.pi, n))
    lo = _col(rng.uniform(0.05, 0.2, n))
    hi = lo + _col(rng.uniform(0.1, 0.25, n))
    t = (np.cos(theta) * (_XX - _CENTRE) + np.sin(theta) * (_YY - _CENTRE)) / (_CENTRE * 2**0.5)
    img = lo + (hi - lo) * (t + 1) / 2
    centres, active = _separated_points(rng, fine + 1, 4, 5.5, 25.5, 2 * 4.5 + 1.5)
    a = rng.uniform(2.5, 4.5, (n, 4))
    b = 2.0 + rng.random((n, 4)) * (a - 2.0)
    phi = rng.uniform(0, np.pi, (n, 4))
    peak = rng.uniform(0.8, 1.0, (n, 4))
    for j in range(4):
        u, v = _rotated(centres[:, j, 0], centres[:, j, 1], phi[:, j])
        r2 = (u / _col(a[:, j])) ** 2 + (v / _col(b[:, j])) ** 2
        blob = _col(peak[:, j]) * np.clip(1.5 * (1 - r2), 0, 1)
        img = np.where(_col(active[:, j]), np.maximum(img, blob), img)
    return np.repeat(img[..., None], 3, axis=-1)


def _fundus(rng: np.random.Generator, fine: np.ndarray) -> np.ndarray:
    """Fundus: near-black field, orange disc (radius 12-14.5, darker towards its rim), 3-5 dark red
    vessel-like cubic Bezier curves fanning out from one point, and `fine` small bright spots.

    Varies: disc centre, radius and colour; vessel origin, end points, bends, and width (1 or 2
    rasterized curves); spot centres (within 6.3 px of the disc centre per axis, so inside the
    disc, and >= 5.5 apart), radii in [1.3, 2] and yellow-white colour.
    Spots are drawn last, so vessels never split one; only spots have blue > 0.45 (disc and
    vessels have blue <= 0.2).
    Label: fine = number of spots (0-3, 4 classes).
    """
    n, num_vessels, num_t = len(fine), 5, 50  # samples < 1 px apart
    c = _CENTRE + rng.uniform(-1.5, 1.5, size=(n, 2))
    radius = rng.uniform(12.0, 14.5, n)
    d = np.sqrt((_YY - _col(c[:, 0])) ** 2 + (_XX - _col(c[:, 1])) ** 2)
    inside = d <= _col(radius)
    shade = (1 - 0.35 * (d / _col(radius)) ** 2)[..., None]  # [n, 32, 32, 1]
    orange = rng.uniform([0.8, 0.4, 0.1], [0.95, 0.5, 0.2], size=(n, 3)).astype(np.float32)
    dark = np.full((n, SIZE, SIZE, 3), 0.02, np.float32)
    img = _paint(dark, inside, orange[:, None, None, :] * shade)
    alpha = rng.uniform(0, 2 * np.pi, n)
    origin = c + 0.4 * radius[:, None] * np.stack([np.sin(alpha), np.cos(alpha)], -1)  # [n, 2]
    beta = rng.uniform(0, 2 * np.pi, (n, num_vessels))
    end = c[:, None] + 0.95 * radius[:, None, None] * np.stack([np.sin(beta), np.cos(beta)], -1)
    thirds = np.array([1 / 3, 2 / 3])[None, None, :, None]
    mid = origin[:, None, None] + thirds * (end - origin[:, None])[:, :, None]
    mid = mid + rng.uniform(-4, 4, size=(n, num_vessels, 2, 2))
    origins = np.broadcast_to(origin[:, None, None], (n, num_vessels, 1, 2))
    ctrl = np.concatenate([origins, mid, end[:, :, None]], axis=2)  # [n, vessels, 4, 2]
    t = np.linspace(0, 1, num_t)[:, None]
    bernstein = np.concatenate([(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3], 1)
    bernstein = bernstein.astype(np.float32)
    ctrl = ctrl.astype(np.float32)
    curve = sum(bernstein[:, j, None] * ctrl[:, :, j, None] for j in range(4))  # [n, vessels, t, 2]
    tangent = np.gradient(curve, axis=2)
    normal = np.stack([tangent[..., 1], -tangent[..., 0]], -1)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True) + 1e-9
    # A wide vessel is the curve plus its copy shifted 0.7 px across; samples are rounded to pixels.
    pts = np.concatenate([curve, curve + 0.7 * normal], axis=2)
    drawn = np.arange(num_vessels) < rng.integers(3, 6, n)[:, None]  # [n, vessels]
    wide = rng.random((n, num_vessels)) < 0.5
    use = np.concatenate(
        [np.broadcast_to(drawn[..., None], (n, num_vessels, num_t)),
         np.broadcast_to((drawn & wide)[..., None], (n, num_vessels, num_t))], axis=2
    )  # fmt: skip
    iy, ix = np.round(pts).astype(int).transpose(3, 0, 1, 2)
    use &= (iy >= 0) & (iy < SIZE) & (ix >= 0) & (ix < SIZE)
    ni = np.broadcast_to(np.arange(n)[:, None, None], iy.shape)
    ni, iy, ix = ni[use], iy[use], ix[use]
    on = inside[ni, iy, ix]
    vessels = np.zeros((n, SIZE, SIZE), bool)
    vessels[ni[on], iy[on], ix[on]] = True
    img = _paint(img, vessels, np.array([0.5, 0.12, 0.06], np.float32) * shade)
    half = (12.0 - 3.0) / np.sqrt(2)  # the square inscribed in the smallest radius less 3 px
    centres, active = _separated_points(rng, fine, 3, -half, half, 2 * 2.0 + 1.5)
    spot_r = rng.uniform(1.3, 2.0, (n, 3))
    spot = rng.uniform([1.0, 0.9, 0.6], [1.0, 1.0, 0.8], size=(n, 3, 3))
    return _stamp_discs(img, c[:, None] + centres, spot_r, active, spot)


def _oct(rng: np.random.Generator, fine: np.ndarray) -> np.ndarray:
    """OCT: fine + 3 bright horizontal bands on a dark background, all shifted by one sinusoidal
    vertical warp y -> y + A sin(2 pi x / lambda + phase), drawn grey with the OCT_TINT cast.

    Varies: stack height H in [20, 24] and top; band period p = H / bands (>= 3.33); each band's
    thickness in [0.4 p, 0.6 p] (so every band and every gap is longer than 1 px and holds at least
    one pixel centre on any column) and brightness in [0.6, 0.95]; background level in [0.03, 0.15];
    warp amplitude A in [0.5, 2], wavelength in [12, 40] px and phase. The warp shifts whole
    columns, so the stack stays inside rows 1..30.
    Label: fine = number of bands - 3 (3-6 bands, 4 classes).
    """
    n = len(fine)
    bands = fine + 3
    height = rng.uniform(20.0, 24.0, n)
    amp = rng.uniform(0.5, 2.0, n)
    top = amp + 1 + rng.random(n) * (SIZE - 2 - height - 2 * amp)  # U(A + 1, 31 - H - A)
    period = height / bands
    thickness = rng.uniform(0.4, 0.6, size=(n, 6)) * period[:, None]
    level = rng.uniform(0.6, 0.95, size=(n, 6))
    wavelength, phase = rng.uniform(12, 40, n), rng.uniform(0, 2 * np.pi, n)
    warp = _col(amp) * np.sin(2 * np.pi * _XX / _col(wavelength) + _col(phase))
    pos = _YY - _col(top) - warp  # [n, 32, 32] position inside the unwarped stack
    idx = np.floor(pos / _col(period)).astype(int)
    valid = (idx >= 0) & (idx < _col(bands))
    idx = np.clip(idx, 0, 5).reshape(n, -1)
    band_thickness = np.take_along_axis(thickness, idx, 1).reshape(n, SIZE, SIZE)
    band_level = np.take_along_axis(level, idx, 1).reshape(n, SIZE, SIZE)
    bright = valid & (pos - idx.reshape(n, SIZE, SIZE) * _col(period) < band_thickness)
    img = np.where(bright, band_level.astype(np.float32), _col(rng.uniform(0.03, 0.15, n)))
    return img[..., None] * OCT_TINT


def _dermoscopy(rng: np.random.Generator, fine: np.ndarray) -> np.ndarray:
    """Dermoscopy: skin-tone background with a soft shading gradient and one dark brown lesion.

    Shapes (fine class): 0 round (ellipse, radius 6-9, axis ratio <= 1.1); 1 elongated (ellipse,
    semi-axes 9-12 by 3.5-4.5, ratio >= 2); 2 irregular (star-shaped, radius r0 (1 + m sin(k t))
    with r0 in [7, 9], k in 5-7 lobes, m in [0.35, 0.45]); 3 two-lobed (two discs of radius 4-5.5
    side by side with a 2-3 px gap, i.e. two separate parts).
    Varies: skin and lesion colours, shading, lesion centre (+-2 px) and orientation.
    Label: fine = shape index (4 classes).
    """
    n = len(fine)
    skin = rng.uniform([0.78, 0.6, 0.5], [0.88, 0.72, 0.6], size=(n, 3))
    g = rng.uniform(-0.05, 0.05, size=(n, 2))  # shading within +-10%: skin stays < 1
    shading = 1 + (_col(g[:, 0]) * (_YY - _CENTRE) + _col(g[:, 1]) * (_XX - _CENTRE)) / _CENTRE
    lesion = rng.uniform([0.3, 0.18, 0.1], [0.45, 0.28, 0.18], size=(n, 3))
    centre = _CENTRE + rng.uniform(-2, 2, size=(n, 2))
    u, v = _rotated(centre[:, 0], centre[:, 1], rng.uniform(0, np.pi, n))
    r = _col(rng.uniform(6.0, 9.0, n))
    round_ = (u / (r * _col(rng.uniform(1.0, 1.1, n)))) ** 2 + (v / r) ** 2 <= 1
    a, b = _col(rng.uniform(9.0, 12.0, n)), _col(rng.uniform(3.5, 4.5, n))
    elongated = (u / a) ** 2 + (v / b) ** 2 <= 1
    lobes = _col(rng.integers(5, 8, n)) * np.arctan2(v, u)
    rho = _col(rng.uniform(7.0, 9.0, n)) * (1 + _col(rng.uniform(0.35, 0.45, n)) * np.sin(lobes))
    irregular = u**2 + v**2 <= rho**2
    r1, r2, gap = (_col(rng.uniform(lo, hi, n)) for lo, hi in ((4, 5.5), (4, 5.5), (2, 3)))
    two = ((u + r1 + gap / 2) ** 2 + v**2 <= r1**2) | ((u - r2 - gap / 2) ** 2 + v**2 <= r2**2)
    mask = np.choose(fine[:, None, None], [round_, elongated, irregular, two])
    return _paint(skin[:, None, None, :].astype(np.float32) * shading[..., None], mask, lesion)


def _pathology(rng: np.random.Generator, fine: np.ndarray) -> np.ndarray:
    """Pathology: pink stroma texture (base colour times 1 + a sum of three random plane waves,
    within +-8.1%) with dark purple nuclei at density level `fine`.

    Varies: pink colour, texture waves, number of nuclei within the level's range
    NUCLEI_PER_LEVEL[fine] (level l: 4l + 2 ... 4l + 4 nuclei), their centres (>= 5 apart, so no
    two touch), radii in [1.2, 1.7] and colour.
    Label: fine = density level (4 classes); from a nucleus count c, level = (c - 1) // 4.
    """
    n, k_max = len(fine), NUCLEI_PER_LEVEL[-1][1]
    pink = rng.uniform([0.82, 0.55, 0.7], [0.92, 0.7, 0.85], size=(n, 3))  # x 1.081 < 1
    freq = rng.uniform(0.2, 0.8, size=(n, 3, 2)) * rng.choice([-1, 1], size=(n, 3, 2))
    amp, phase = rng.uniform(0.01, 0.027, (n, 3)), rng.uniform(0, 2 * np.pi, (n, 3))
    tex = sum(
        _col(amp[:, j]) * np.sin(_col(freq[:, j, 0]) * _YY + _col(freq[:, j, 1]) * _XX
                                 + _col(phase[:, j]))
        for j in range(3)
    )  # fmt: skip
    img = pink[:, None, None, :].astype(np.float32) * (1 + tex[..., None])
    count = rng.integers(4 * fine + 2, 4 * fine + 5)
    centres, active = _separated_points(rng, count, k_max, 2.0, 29.0, 2 * 1.7 + 1.6)
    nuc_r = rng.uniform(1.2, 1.7, (n, k_max))
    colour = rng.uniform([0.25, 0.1, 0.35], [0.4, 0.2, 0.5], size=(n, k_max, 3))
    return _stamp_discs(img, centres, nuc_r, active, colour)


_DRAW = (_xray, _fundus, _oct, _dermoscopy, _pathology)  # in the order of MODALITIES


def generate(
    n_per_modality: int,
    seed: int,
    noise: float = 0.05,
    contrast: tuple[float, float] = (0.8, 1.2),
    clean: bool = False,
) -> SyntheticImages:
    """n_per_modality images of each of the five modalities, deterministic in `seed`.

    Unless `clean`, each image gets a random contrast c ~ U(contrast) about its own mean
    (x -> mean + c (x - mean)) and then i.i.d. Gaussian noise of std `noise`, and is clipped to
    [0, 1] (the images' defined range). Modality m draws from the stream (seed, m), the
    perturbations from (seed, len(MODALITIES)): the clean images do not depend on noise settings.
    """
    if n_per_modality < 1:
        raise ValueError(f"n_per_modality must be >= 1, got {n_per_modality}")
    if noise < 0 or not 0 < contrast[0] <= contrast[1]:
        raise ValueError(
            f"need noise >= 0 and 0 < contrast[0] <= contrast[1], got {noise}, {contrast}"
        )
    xs, fines = [], []
    for m, draw in enumerate(_DRAW):
        rng = np.random.default_rng([seed, m])
        fine = rng.permutation(np.arange(n_per_modality) % NUM_FINE)
        xs.append(draw(rng, fine).astype(np.float32))
        fines.append(fine)
    x = np.concatenate(xs)
    if not clean:
        rng = np.random.default_rng([seed, len(MODALITIES)])
        c = rng.uniform(contrast[0], contrast[1], size=(len(x), 1, 1, 1)).astype(np.float32)
        mean = x.mean(axis=(1, 2, 3), keepdims=True)
        x -= mean  # in place: x is ~300 MB at 5,000 per modality
        x *= c
        x += mean
        x += np.float32(noise) * rng.standard_normal(x.shape, dtype=np.float32)
        np.clip(x, 0.0, 1.0, out=x)  # clean images lie in [0, 1] by construction
    modality = np.repeat(np.arange(len(MODALITIES), dtype=np.int32), n_per_modality)
    return SyntheticImages(x, modality, np.concatenate(fines).astype(np.int32))
