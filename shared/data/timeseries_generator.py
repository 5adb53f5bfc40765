"""Multivariate time-series anomaly benchmark: one container, seeded anomaly injectors, and a
generator whose channels depend on each other.

Anomaly taxonomy: the five types of TODS (Lai et al., NeurIPS 2021 D&B; `datamllab/tods`,
`benchmark/synthetic/Generator`) plus a dependency break (TeamWork spec, ../papers/teamwork.md):
  point_global         one point pushed beyond the channel's global [min, max]
  point_contextual     one point moved by `factor` local stds, clipped inside [min, max]
  collective_shapelet  a segment replaced by a square-wave shapelet (TODS "collective global")
  collective_seasonal  a segment replayed `factor` times faster (frequency x factor)
  collective_trend     a linear ramp of +-`factor` stds added over the segment
  dependency_break     a segment of a channel replaced by a segment of the same channel copied
                       from normal (train) data at another time, chosen among random candidates
                       as the least correlated with the clean segment: its values stay in the
                       channel's normal range, its relation to its drivers is broken.
Every injection reads the clean series and writes only inside its labelled range. Deviation from
TODS: TODS lets a trend's final offset persist after the segment (a level shift over unlabelled
points); here the ramp ends with the segment, so labels cover every changed point.
Arrays: train [T1, C] float32 (normal only), test [T2, C] float32, test_labels [T2] int32.
"""

from __future__ import annotations

import dataclasses

import numpy as np

ANOMALY_TYPES = (
    "point_global",
    "point_contextual",
    "collective_shapelet",
    "collective_seasonal",
    "collective_trend",
    "dependency_break",
)
TYPE_NAMES = ("normal",) + ANOMALY_TYPES  # test_types ids index this tuple; 0 = normal
POINT_TYPES = ("point_global", "point_contextual")


@dataclasses.dataclass(frozen=True)
class AnomalyEvent:
    kind: str  # one of ANOMALY_TYPES
    channel: int  # the channel that was changed
    start: int  # first anomalous test step
    end: int  # one past the last anomalous test step


@dataclasses.dataclass(frozen=True)
class AnomalySeries:
    name: str
    train: np.ndarray  # [T1, C] float32, normal data only
    test: np.ndarray  # [T2, C] float32
    test_labels: np.ndarray  # [T2] int32, 1 = anomalous step (shared across channels)
    test_types: np.ndarray | None = None  # [T2] int32 ids into type_names (0 = normal)
    type_names: tuple[str, ...] = ()
    channel_roles: tuple[str, ...] | None = None  # per channel "dominant"/"auxiliary", if known
    channel_names: tuple[str, ...] = ()
    events: tuple[AnomalyEvent, ...] = ()  # injected anomalies (empty for real labelled data)

    def __post_init__(self):
        if self.train.ndim != 2 or self.test.ndim != 2:
            raise ValueError(f"{self.name}: train and test must be [T, C] arrays")
        if self.train.shape[1] != self.test.shape[1]:
            raise ValueError(
                f"{self.name}: train has {self.train.shape[1]} channels, test {self.test.shape[1]}"
            )
        if self.test_labels.shape != (len(self.test),):
            raise ValueError(
                f"{self.name}: test_labels shape {self.test_labels.shape}, expected "
                f"({len(self.test)},)"
            )
        if not np.isin(self.test_labels, (0, 1)).all():
            raise ValueError(f"{self.name}: test_labels must be 0/1")
        if self.test_types is not None:
            if self.test_types.shape != self.test_labels.shape:
                raise ValueError(f"{self.name}: test_types and test_labels shapes differ")
            if not np.array_equal(self.test_types > 0, self.test_labels == 1):
                raise ValueError(f"{self.name}: test_types > 0 must match test_labels == 1")
        if self.channel_roles is not None and len(self.channel_roles) != self.num_channels:
            raise ValueError(f"{self.name}: one role per channel is needed")
        if self.channel_names and len(self.channel_names) != self.num_channels:
            raise ValueError(f"{self.name}: one name per channel is needed")

    @property
    def num_channels(self) -> int:
        return self.train.shape[1]

    @property
    def anomaly_ratio(self) -> float:
        return float(self.test_labels.mean())


@dataclasses.dataclass(frozen=True)
class InjectionConfig:
    anomaly_ratio: float = 0.04  # fraction of test steps labelled anomalous (~0.01-0.05)
    min_length: int = 10  # collective segment length range (inclusive)
    max_length: int = 50
    gap: int = 5  # free steps kept between events, so that events stay separate
    point_factor: float = 3.0  # point_contextual shift in local stds
    seasonal_factor: int = 3  # collective_seasonal speed-up
    trend_factor: float = 2.0  # collective_trend final offset in channel stds
    break_candidates: int = 64  # source segments tried per dependency break


def _plan_events(
    rng: np.random.Generator, anomaly_types: tuple[str, ...], target: int, cfg: InjectionConfig
) -> list[tuple[str, int]]:
    """(kind, length) per event: types cycle in seeded random order, every type at least once,
    until `target` labelled steps; then collective lengths are cut (last first, down to
    cfg.min_length) so the total is as close to `target` as that floor allows."""
    plan: list[tuple[str, int]] = []
    order: list[str] = []
    while sum(n for _, n in plan) < target or len(plan) < len(anomaly_types):
        if not order:
            order = [anomaly_types[i] for i in rng.permutation(len(anomaly_types))]
        kind = order.pop(0)
        n = 1 if kind in POINT_TYPES else int(rng.integers(cfg.min_length, cfg.max_length + 1))
        plan.append((kind, n))
    excess = sum(n for _, n in plan) - target
    for i in reversed(range(len(plan))):
        kind, n = plan[i]
        if excess > 0 and kind not in POINT_TYPES:
            cut = min(excess, n - cfg.min_length)
            plan[i] = (kind, n - cut)
            excess -= cut
    return plan


def _least_correlated_segment(
    source: np.ndarray, segment: np.ndarray, rng: np.random.Generator, cfg: InjectionConfig
) -> np.ndarray:
    """Among cfg.break_candidates random windows of `source` [T'] as long as `segment` [L], the one
    with the smallest |Pearson correlation| with `segment` (a constant window counts as 0)."""
    n = len(segment)
    if len(source) < 2 * n:
        raise ValueError(f"dependency_break needs normal data longer than 2 x {n} steps")
    starts = rng.integers(0, len(source) - n + 1, size=cfg.break_candidates)
    windows = source[starts[:, None] + np.arange(n)]  # [K, L]
    a = windows - windows.mean(1, keepdims=True)
    b = segment - segment.mean()
    denom = np.sqrt((a**2).sum(1) * (b**2).sum())
    corr = np.abs(a @ b) / np.where(denom > 0, denom, np.inf)
    return windows[int(np.argmin(corr))]


def _local_std(x: np.ndarray, i: int, fallback: float, half: int = 10) -> float:
    s = float(x[max(0, i - half) : i + half].std())
    return s if s > 1e-8 else fallback


def inject_anomalies(
    clean: np.ndarray,
    rng: np.random.Generator,
    anomaly_types: tuple[str, ...] = ANOMALY_TYPES,
    cfg: InjectionConfig = InjectionConfig(),
    reference: np.ndarray | None = None,
    roles: tuple[str, ...] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[AnomalyEvent, ...]]:
    """Injects non-overlapping anomalies into `clean` [T, C] until ~cfg.anomaly_ratio of steps are
    labelled (every requested type at least once, so the ratio is at least about
    (#point types + cfg.min_length * #collective types) / T).
    `reference` [T', C] (normal data, e.g. train) widens the per-channel min/max/std. `roles`
    sends dependency breaks to auxiliary channels and alternates the other types between dominant
    and auxiliary channels. A dependency break copies from `reference` (from `clean` without it).
    Returns (x [T, C] float32, labels [T] int32, types [T] int32 ids into TYPE_NAMES, events)."""
    unknown = [t for t in anomaly_types if t not in ANOMALY_TYPES]
    if unknown or not anomaly_types:
        raise ValueError(f"anomaly_types {anomaly_types}: choose from {ANOMALY_TYPES}")
    if not 0 < cfg.anomaly_ratio < 0.5:
        raise ValueError(f"anomaly_ratio {cfg.anomaly_ratio} must be in (0, 0.5)")
    t_len, n_ch = clean.shape
    if cfg.max_length + 2 * cfg.gap > t_len // 4:
        raise ValueError(f"test length {t_len} is too short for segments of {cfg.max_length}")
    ref = clean if reference is None else np.concatenate([reference, clean])
    lo, hi, std = ref.min(0), ref.max(0), np.where(ref.std(0) > 1e-8, ref.std(0), 1.0)
    source = clean if reference is None else reference
    aux = [c for c in range(n_ch) if roles is not None and roles[c] == "auxiliary"]
    dom = [c for c in range(n_ch) if roles is not None and roles[c] == "dominant"]

    x = clean.astype(np.float32).copy()
    labels = np.zeros(t_len, np.int32)
    types = np.zeros(t_len, np.int32)
    taken = np.zeros(t_len, bool)  # events plus their gaps
    target = int(round(cfg.anomaly_ratio * t_len))
    events: list[AnomalyEvent] = []
    counts = dict.fromkeys(anomaly_types, 0)
    for kind, length in _plan_events(rng, anomaly_types, target, cfg):
        # starts s with [s - gap, s + length + gap) free of other events, drawn uniformly
        blocked = np.concatenate([[0], np.cumsum(taken)])
        starts = np.arange(cfg.gap, t_len - length - cfg.gap + 1)
        free = starts[blocked[starts + length + cfg.gap] == blocked[starts - cfg.gap]]
        if len(free) == 0:
            raise ValueError(
                f"could not place a {length}-step anomaly: anomaly_ratio {cfg.anomaly_ratio} is "
                f"too high for a test length of {t_len}"
            )
        s = int(rng.choice(free))
        e = s + length
        if kind == "dependency_break" and aux:
            c = int(rng.choice(aux))
        elif roles is not None and dom and aux:
            c = int(rng.choice(dom if counts[kind] % 2 == 0 else aux))
        else:
            c = int(rng.integers(n_ch))
        counts[kind] += 1
        x0 = clean[:, c]
        sign = float(rng.choice((-1.0, 1.0)))
        if kind == "point_global":
            bound = hi[c] if sign > 0 else lo[c]
            x[s, c] = bound + sign * std[c] * rng.uniform(0.5, 1.5)
        elif kind == "point_contextual":
            ls = _local_std(x0, s, std[c])
            v = np.clip(x0[s] + sign * cfg.point_factor * ls, lo[c], hi[c])
            if abs(v - x0[s]) < 0.5 * ls:  # clipped back at a boundary: move the other way
                v = np.clip(x0[s] - sign * cfg.point_factor * ls, lo[c], hi[c])
            x[s, c] = v
        elif kind == "collective_shapelet":
            square = np.sign(np.sin(2 * np.pi * 2 * (np.arange(length) + 0.5) / length))
            x[s:e, c] = x0[s:e].mean() + std[c] * square
        elif kind == "collective_seasonal":
            k = np.arange(length)
            x[s:e, c] = np.interp((k * cfg.seasonal_factor) % length, k, x0[s:e])
        elif kind == "collective_trend":
            ramp = np.arange(1, length + 1) / length
            x[s:e, c] = x0[s:e] + sign * cfg.trend_factor * std[c] * ramp
        else:  # dependency_break
            x[s:e, c] = _least_correlated_segment(source[:, c], x0[s:e], rng, cfg)
        labels[s:e] = 1
        types[s:e] = TYPE_NAMES.index(kind)
        taken[s - cfg.gap : e + cfg.gap] = True
        events.append(AnomalyEvent(kind, c, s, e))
    return x, labels, types, tuple(sorted(events, key=lambda ev: ev.start))


def _dominant_signals(
    rng: np.random.Generator, t: np.ndarray, periods: tuple[float, ...], num: int, noise: float
) -> np.ndarray:
    """[len(t), num]: channel k = sin at its main period periods[k % P] (amplitude 1) plus the other
    periods at amplitude 0.3, random phases, plus N(0, noise^2)."""
    out = np.zeros((len(t), num))
    for k in range(num):
        for j, p in enumerate(periods):
            amp = 1.0 if j == k % len(periods) else 0.3
            out[:, k] += amp * np.sin(2 * np.pi * t / p + rng.uniform(0, 2 * np.pi))
    return out + noise * rng.standard_normal(out.shape)


def make_benchmark(
    seed: int = 0,
    num_dominant: int = 3,
    num_auxiliary: int = 9,
    length: int = 15_000,
    anomaly_types: tuple[str, ...] = ANOMALY_TYPES,
    anomaly_ratio: float = 0.04,
    train_fraction: float = 2 / 3,
    periods: tuple[float, ...] = (10.0, 25.0, 50.0),
    drivers_per_auxiliary: int = 2,
    max_lag: int = 10,
    dominant_noise: float = 0.05,
    auxiliary_noise: float = 0.1,
    nonlinear: bool = False,
    injection: InjectionConfig | None = None,  # lengths/factors; its anomaly_ratio is ignored
) -> AnomalySeries:
    """Seeded benchmark (TeamWork spec's suggested setting by default: 12 channels, 10,000 clean
    train steps, 5,000 test steps with ~4% anomalous). Channels 0..num_dominant-1 are dominant
    (sums of sinusoids + noise); auxiliary j = f(sum_k w_jk d_k(t - lag_jk)) + noise with
    `drivers_per_auxiliary` nonzero w ~ N(0, 1), lags in {0..max_lag}, f = tanh if `nonlinear`.
    A dependency break goes to an auxiliary channel (see `inject_anomalies`)."""
    if num_dominant < 1 or num_auxiliary < 0:
        raise ValueError("need num_dominant >= 1 and num_auxiliary >= 0")
    if "dependency_break" in anomaly_types and num_auxiliary == 0:
        raise ValueError("dependency_break needs num_auxiliary >= 1")
    rng = np.random.default_rng(seed)
    t = np.arange(-max_lag, length, dtype=np.float64)
    n_drv = min(drivers_per_auxiliary, num_dominant)
    weights = np.zeros((num_auxiliary, num_dominant))
    lags = rng.integers(0, max_lag + 1, size=(num_auxiliary, num_dominant))
    for j in range(num_auxiliary):
        drivers = rng.choice(num_dominant, n_drv, replace=False)
        weights[j, drivers] = rng.standard_normal(n_drv)

    def auxiliaries(dom: np.ndarray) -> np.ndarray:
        out = np.zeros((length, num_auxiliary))
        for j in range(num_auxiliary):
            for k in np.flatnonzero(weights[j]):
                out[:, j] += weights[j, k] * dom[max_lag - lags[j, k] : len(dom) - lags[j, k], k]
        out = np.tanh(out) if nonlinear else out
        return out + auxiliary_noise * rng.standard_normal(out.shape)

    dom = _dominant_signals(rng, t, periods, num_dominant, dominant_noise)
    series = np.concatenate([dom[max_lag:], auxiliaries(dom)], 1)
    n_train = int(round(train_fraction * length))
    roles = ("dominant",) * num_dominant + ("auxiliary",) * num_auxiliary
    cfg = dataclasses.replace(injection or InjectionConfig(), anomaly_ratio=anomaly_ratio)
    test, labels, types, events = inject_anomalies(
        series[n_train:], rng, anomaly_types, cfg, series[:n_train], roles
    )
    names = tuple(f"dom{k}" for k in range(num_dominant)) + tuple(
        f"aux{j}" for j in range(num_auxiliary)
    )
    return AnomalySeries(
        f"synthetic_s{seed}",
        series[:n_train].astype(np.float32),
        test,
        labels,
        types,
        TYPE_NAMES,
        roles,
        names,
        events,
    )
