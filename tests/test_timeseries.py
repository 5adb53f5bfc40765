import csv

import numpy as np
import pytest

from shared.data import timeseries_files as tsf
from shared.data import timeseries_generator as tsg
from shared.data.resolver import MissingDataError

SMALL = dict(num_dominant=2, num_auxiliary=4, length=6000)


def test_generator_shapes_roles_and_determinism():
    a = tsg.make_benchmark(seed=3, **SMALL)
    b = tsg.make_benchmark(seed=3, **SMALL)
    c = tsg.make_benchmark(seed=4, **SMALL)
    assert a.train.shape == (4000, 6) and a.test.shape == (2000, 6)
    assert a.train.dtype == np.float32 and a.test.dtype == np.float32
    assert a.channel_roles == ("dominant",) * 2 + ("auxiliary",) * 4
    for f in ("train", "test", "test_labels", "test_types"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert a.events == b.events
    assert not np.array_equal(a.test, c.test)
    default = tsg.make_benchmark(seed=0)
    assert default.train.shape == (10_000, 12) and default.test.shape == (5_000, 12)


def test_labels_match_events_and_every_type_is_injected():
    s = tsg.make_benchmark(seed=1, **SMALL)
    labels = np.zeros(len(s.test), np.int32)
    types = np.zeros(len(s.test), np.int32)
    for ev in s.events:
        assert labels[ev.start : ev.end].sum() == 0  # events do not overlap
        labels[ev.start : ev.end] = 1
        types[ev.start : ev.end] = s.type_names.index(ev.kind)
        if ev.kind in tsg.POINT_TYPES:
            assert ev.end - ev.start == 1
        if ev.kind == "dependency_break":
            assert s.channel_roles[ev.channel] == "auxiliary"
    np.testing.assert_array_equal(labels, s.test_labels)
    np.testing.assert_array_equal(types, s.test_types)
    assert {ev.kind for ev in s.events} == set(tsg.ANOMALY_TYPES)


@pytest.mark.parametrize("ratio", [0.01, 0.03, 0.05])
def test_anomaly_ratio_matches_requested(ratio):
    s = tsg.make_benchmark(seed=0, anomaly_ratio=ratio, num_dominant=2, num_auxiliary=4)
    assert len(s.test) == 5000
    assert s.test_labels.sum() == round(ratio * 5000)  # collective lengths are cut to fit


def test_every_type_once_sets_a_floor_on_the_ratio():
    # 6 types on 2,000 test steps: 2 points + 4 segments of >= min_length (10) = 42 > 1% of 2000
    s = tsg.make_benchmark(seed=0, anomaly_ratio=0.01, **SMALL)
    assert {ev.kind for ev in s.events} == set(tsg.ANOMALY_TYPES)
    assert s.test_labels.sum() == 2 + 4 * tsg.InjectionConfig().min_length


@pytest.mark.parametrize("kind", tsg.ANOMALY_TYPES)
def test_each_type_changes_data_only_inside_its_range(kind):
    clean = tsg.make_benchmark(seed=2, **SMALL).train[:3000]
    roles = ("dominant",) * 2 + ("auxiliary",) * 4
    rng = np.random.default_rng(0)
    x, labels, types, events = tsg.inject_anomalies(clean, rng, (kind,), roles=roles)
    changed = np.any(x != clean, axis=1)
    assert not (changed & (labels == 0)).any()
    assert set(np.unique(types[labels == 1])) == {tsg.TYPE_NAMES.index(kind)}
    for ev in events:
        seg = x[ev.start : ev.end] != clean[ev.start : ev.end]
        assert seg[:, ev.channel].any()  # the event changed its channel ...
        others = np.delete(seg, ev.channel, axis=1)
        assert not others.any()  # ... and only that channel
    if kind == "point_global":
        for ev in events:
            v = x[ev.start, ev.channel]
            assert v > clean[:, ev.channel].max() or v < clean[:, ev.channel].min()
    if kind == "point_contextual":
        for ev in events:
            v = x[ev.start, ev.channel]
            assert clean[:, ev.channel].min() <= v <= clean[:, ev.channel].max()


def test_types_agree_outside_labels_across_type_sets():
    # the clean test series does not depend on which anomalies are injected
    a = tsg.make_benchmark(seed=5, anomaly_types=("point_global",), **SMALL)
    b = tsg.make_benchmark(seed=5, anomaly_types=("collective_trend",), **SMALL)
    np.testing.assert_array_equal(a.train, b.train)
    both_normal = (a.test_labels == 0) & (b.test_labels == 0)
    np.testing.assert_array_equal(a.test[both_normal], b.test[both_normal])


def _lagged_dominants(x: np.ndarray, n_dom: int, max_lag: int = 10) -> np.ndarray:
    """[T - max_lag, n_dom * (max_lag + 1) + 1] design matrix of lagged dominant channels."""
    cols = [x[max_lag - lag : len(x) - lag, k] for k in range(n_dom) for lag in range(max_lag + 1)]
    return np.stack(cols + [np.ones(len(x) - max_lag)], 1)


def test_dependency_break_keeps_range_but_breaks_relation():
    s = tsg.make_benchmark(seed=0, anomaly_types=("dependency_break",), anomaly_ratio=0.04, **SMALL)
    assert s.events and all(ev.kind == "dependency_break" for ev in s.events)
    a_tr = _lagged_dominants(s.train, 2)
    a_te = _lagged_dominants(s.test, 2)
    for ev in s.events:
        c = ev.channel
        coef, *_ = np.linalg.lstsq(a_tr, s.train[10:, c], rcond=None)
        resid = s.test[10:, c] - a_te @ coef
        inside = np.zeros(len(s.test), bool)
        inside[ev.start : ev.end] = True
        inside = inside[10:]
        normal = s.test_labels[10:] == 0
        seg = s.test[ev.start : ev.end, c]
        assert s.train[:, c].min() <= seg.min() and seg.max() <= s.train[:, c].max()
        # the drivers explain the channel outside the break (noise std 0.1) but not inside it
        assert np.sqrt(np.mean(resid[normal] ** 2)) < 0.15
        assert np.sqrt(np.mean(resid[inside] ** 2)) > 5 * np.sqrt(np.mean(resid[normal] ** 2))
        pred = (a_te @ coef)[inside]
        assert abs(np.corrcoef(pred, s.test[10:, c][inside])[0, 1]) < 0.6
        assert np.corrcoef((a_te @ coef)[normal], s.test[10:, c][normal])[0, 1] > 0.95


def test_nonlinear_auxiliaries_are_bounded():
    s = tsg.make_benchmark(seed=0, nonlinear=True, anomaly_types=("point_global",), **SMALL)
    assert np.abs(s.train[:, 2:]).max() < 1.6  # tanh(.) + 0.1 noise


def test_bad_arguments_fail_clearly():
    with pytest.raises(ValueError, match="choose from"):
        tsg.make_benchmark(anomaly_types=("spike",), **SMALL)
    with pytest.raises(ValueError, match="too high"):
        tsg.make_benchmark(anomaly_ratio=0.2, anomaly_types=("point_global",), **SMALL)
    with pytest.raises(ValueError, match=r"must be in \(0, 0.5\)"):
        tsg.make_benchmark(anomaly_ratio=0.0, **SMALL)
    with pytest.raises(ValueError, match="num_auxiliary"):
        tsg.make_benchmark(num_auxiliary=0, length=6000)


def test_daphnet_shapes_and_injection():
    d = tsf.load_daphnet(seed=0)
    assert d.train.shape == (3520, 9) and d.test.shape == (3520, 9)
    assert d.channel_names[0] == "ankle_horiz_fwd" and d.channel_roles is None
    assert d.test_labels.sum() == round(0.04 * 3520)
    assert {ev.kind for ev in d.events} == set(tsg.ANOMALY_TYPES)
    d2 = tsf.load_daphnet(seed=0)
    np.testing.assert_array_equal(d.test, d2.test)
    e = tsf.load_daphnet(seed=1, anomaly_types=("point_global",))
    np.testing.assert_array_equal(d.train, e.train)
    both_normal = (d.test_labels == 0) & (e.test_labels == 0)
    np.testing.assert_array_equal(d.test[both_normal], e.test[both_normal])


def test_ucr135_shapes_and_anomaly_location():
    u = tsf.load_ucr135()
    assert u.train.shape == (1200, 1) and u.test.shape == (6301, 1)
    np.testing.assert_array_equal(np.flatnonzero(u.test_labels), np.arange(2987, 2999))
    assert u.test_types is None and u.events == ()


def _write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


@pytest.mark.parametrize("name", ["SMD", "MSL", "SMAP"])
def test_npy_loaders_round_trip(tmp_path, name):
    rng = np.random.default_rng(0)
    train = rng.standard_normal((50, 7)).astype(np.float32)
    test = rng.standard_normal((40, 7)).astype(np.float32)
    labels = (rng.random(40) < 0.1).astype(np.float64)  # stored as floats in some releases
    for suffix, arr in (("train", train), ("test", test), ("test_label", labels)):
        np.save(tmp_path / f"{name}_{suffix}.npy", arr)
    s = getattr(tsf, f"load_{name.lower()}")(tmp_path)
    np.testing.assert_array_equal(s.train, train)
    np.testing.assert_array_equal(s.test, test)
    np.testing.assert_array_equal(s.test_labels, labels.astype(np.int32))
    assert s.test_labels.dtype == np.int32
    (tmp_path / f"{name}_test_label.npy").unlink()
    with pytest.raises(MissingDataError, match=f"{name}_test_label.npy.*{tmp_path}"):
        tsf.load_local(name, tmp_path)


def test_psm_loader_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    header = ["timestamp_(min)"] + [f"feature_{i}" for i in range(4)]
    train = rng.standard_normal((30, 4))
    test = rng.standard_normal((20, 4))
    labels = (rng.random(20) < 0.2).astype(int)
    train_rows = [[i] + [repr(float(v)) for v in r] for i, r in enumerate(train)]
    train_rows[3][2] = ""  # a missing value becomes 0, as in Anomaly-Transformer
    _write_csv(tmp_path / "train.csv", header, train_rows)
    _write_csv(
        tmp_path / "test.csv",
        header,
        [[i] + [repr(float(v)) for v in r] for i, r in enumerate(test)],
    )
    _write_csv(tmp_path / "test_label.csv", ["timestamp_(min)", "label"], enumerate(labels))
    s = tsf.load_psm(tmp_path)
    expected = train.copy()
    expected[3, 1] = 0.0
    np.testing.assert_array_equal(s.train, expected.astype(np.float32))
    np.testing.assert_array_equal(s.test, test.astype(np.float32))
    np.testing.assert_array_equal(s.test_labels, labels)
    assert s.channel_names == tuple(header[1:])


@pytest.mark.parametrize("name", tsf.LOCAL_SETS)
def test_local_loaders_fail_clearly(tmp_path, name):
    files = tsf.expected_files(name)
    with pytest.raises(MissingDataError) as err:
        tsf.load_local(name, tmp_path / "absent")
    assert all(f in str(err.value) for f in files) and str(tmp_path / "absent") in str(err.value)
    with pytest.raises(MissingDataError, match="local directory"):
        tsf.load_local(name, None)
    with pytest.raises(ValueError, match="unknown benchmark"):
        tsf.load_local("SWaT", tmp_path)
