"""Real time series: packaged series from `aeon` 1.6.0 (read as files; aeon is never imported)
and the usual anomaly benchmarks from a local directory.

Packaged (aeon/datasets/data/):
  Daphnet_S06R02E0/S06R02E0.csv  header `timestamp,<9 channels>,is_anomaly`; 7,040 rows at 64 Hz
      (00:04:40.000 to 00:06:29.984), integer accelerometer readings (milli-g) of ankle, thigh
      ("leg") and trunk sensors; is_anomaly is 0 everywhere: used as a normal base, split by time
      and injected with the generator's anomaly types.
  KDD-TSAD_135/135_UCR_Anomaly_InternalBleeding16_{TRAIN,TEST}.csv  header
      `timestamp,value,is_anomaly`. TRAIN = steps 0..1199 (no anomaly); TEST = the whole series,
      steps 0..7500 (its first 1,200 rows equal TRAIN), is_anomaly = 1 at steps 4187..4198
      (12 points). The original UCR file name `135_UCR_Anomaly_InternalBleeding16_1200_4187_4199`
      encodes train end 1200 and the anomaly 4187-4199; aeon's labels are the half-open [4187,
      4199). Our test part is TEST[1200:] (6,301 steps, anomaly at test steps 2987..2998).
Local directory (Anomaly-Transformer / TSLib preprocessed layouts): SMD, MSL, SMAP as
`<NAME>_train.npy`, `<NAME>_test.npy`, `<NAME>_test_label.npy`; PSM as `train.csv`, `test.csv`
(first column a timestamp), `test_label.csv` (timestamp, label). Values are returned raw (no
scaling); PSM's missing values become 0, as Anomaly-Transformer's `np.nan_to_num` does.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib

import numpy as np

from shared.data.resolver import MissingDataError, package_file
from shared.data.timeseries_generator import (
    ANOMALY_TYPES,
    TYPE_NAMES,
    AnomalySeries,
    InjectionConfig,
    inject_anomalies,
)

DAPHNET_FILE = ("datasets", "data", "Daphnet_S06R02E0", "S06R02E0.csv")
UCR135_DIR = ("datasets", "data", "KDD-TSAD_135")
UCR135_STEM = "135_UCR_Anomaly_InternalBleeding16"
UCR135_TRAIN_END = 1200  # from the original UCR file name 135_..._1200_4187_4199


def _read_csv(path: pathlib.Path) -> tuple[list[str], np.ndarray, list[str]]:
    """(header, numeric columns 1.. as float64 [N, K], column 0 as strings)."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    if len(rows) < 2:
        raise ValueError(f"{path} has no data rows; expected a header row and data rows")
    header = [h.strip() for h in rows[0]]
    for i, r in enumerate(rows[1:]):
        if len(r) != len(header):
            raise ValueError(f"{path.name} row {i + 2} has {len(r)} fields, header {len(header)}")
    try:
        vals = np.array([[float(v) if v.strip() else np.nan for v in r[1:]] for r in rows[1:]])
    except ValueError as e:
        raise ValueError(f"{path.name}: a non-numerical value after column 0 ({e})") from e
    return header, vals, [r[0] for r in rows[1:]]


def load_daphnet(
    seed: int = 0,
    train_fraction: float = 0.5,
    anomaly_types: tuple[str, ...] = ANOMALY_TYPES,
    anomaly_ratio: float = 0.04,
    injection: InjectionConfig | None = None,  # lengths/factors; its anomaly_ratio is ignored
) -> AnomalySeries:
    """Daphnet S06R02E0 (9 channels, 7,040 steps) split by time: train = the first
    `train_fraction` (3,520 steps by default), test = the rest with anomalies injected (seeded).
    Roles are unknown: every type goes to a random channel; a dependency break copies a segment
    of the same channel from the train part."""
    path = package_file("aeon", *DAPHNET_FILE)
    header, vals, _ = _read_csv(path)
    if header[-1] != "is_anomaly" or vals[:, -1].any():
        raise ValueError(f"{path}: expected an all-zero last column 'is_anomaly' (a normal base)")
    x = vals[:, :-1]
    n_train = int(round(train_fraction * len(x)))
    cfg = dataclasses.replace(injection or InjectionConfig(), anomaly_ratio=anomaly_ratio)
    rng = np.random.default_rng(seed)
    test, labels, types, events = inject_anomalies(
        x[n_train:], rng, anomaly_types, cfg, reference=x[:n_train]
    )
    return AnomalySeries(
        f"daphnet_s{seed}",
        x[:n_train].astype(np.float32),
        test,
        labels,
        types,
        TYPE_NAMES,
        None,
        tuple(header[1:-1]),
        events,
    )


def load_ucr135() -> AnomalySeries:
    """UCR anomaly #135 (InternalBleeding16): train [1200, 1], test [6301, 1], 12 anomalous test
    steps (2987..2998, i.e. series steps 4187..4198)."""
    train_path = package_file("aeon", *UCR135_DIR, f"{UCR135_STEM}_TRAIN.csv")
    test_path = package_file("aeon", *UCR135_DIR, f"{UCR135_STEM}_TEST.csv")
    _, train, _ = _read_csv(train_path)
    _, full, _ = _read_csv(test_path)
    n = UCR135_TRAIN_END
    if len(train) != n or not np.array_equal(full[:n, 0], train[:, 0]) or train[:, 1].any():
        raise ValueError(f"{train_path.name}: expected the clean first {n} steps of the TEST file")
    return AnomalySeries(
        "ucr135_InternalBleeding16",
        train[:, :1].astype(np.float32),
        full[n:, :1].astype(np.float32),
        full[n:, 1].astype(np.int32),
        channel_names=("value",),
    )


# ---------------------------------------------------------------------------------------------
# Local directory: Anomaly-Transformer / TSLib preprocessed files.
LOCAL_SETS = ("SMD", "MSL", "SMAP", "PSM")


def expected_files(name: str) -> tuple[str, str, str]:
    if name not in LOCAL_SETS:
        raise ValueError(f"unknown benchmark '{name}'; choose one of {LOCAL_SETS}")
    if name == "PSM":
        return ("train.csv", "test.csv", "test_label.csv")
    return (f"{name}_train.npy", f"{name}_test.npy", f"{name}_test_label.npy")


def load_local(name: str, data_dir: str | pathlib.Path | None) -> AnomalySeries:
    """SMD, MSL, SMAP or PSM from `data_dir` (see the module docstring for the layouts)."""
    files = expected_files(name)
    if not data_dir:
        raise MissingDataError(
            f"{name} is read from a local directory: pass data_dir=<dir holding {', '.join(files)}>"
        )
    base = pathlib.Path(data_dir)
    missing = [f for f in files if not (base / f).is_file()]
    if missing:
        raise MissingDataError(
            f"{name}: missing {', '.join(missing)} in data directory '{base}'; expected "
            f"{', '.join(files)} (Anomaly-Transformer/TSLib preprocessed layout)"
        )
    paths = [base / f for f in files]
    if name == "PSM":
        (train_h, train, _), (test_h, test, _), (_, lab, _) = (_read_csv(p) for p in paths)
        if train_h[1:] != test_h[1:]:
            raise ValueError(f"PSM: train.csv and test.csv headers differ in '{base}'")
        train, test = np.nan_to_num(train), np.nan_to_num(test)
        names = tuple(train_h[1:])
        labels = lab[:, 0] if lab.ndim == 2 and lab.shape[1] >= 1 else lab
    else:
        train, test, labels = (np.load(p) for p in paths)
        names = ()
    labels = np.asarray(labels).reshape(-1)
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"{name}: {files[2]} must hold 0/1 labels")
    return AnomalySeries(
        name,
        np.asarray(train, np.float32),
        np.asarray(test, np.float32),
        labels.astype(np.int32),
        channel_names=names,
    )


def load_smd(data_dir: str | pathlib.Path | None) -> AnomalySeries:
    return load_local("SMD", data_dir)


def load_msl(data_dir: str | pathlib.Path | None) -> AnomalySeries:
    return load_local("MSL", data_dir)


def load_smap(data_dir: str | pathlib.Path | None) -> AnomalySeries:
    return load_local("SMAP", data_dir)


def load_psm(data_dir: str | pathlib.Path | None) -> AnomalySeries:
    return load_local("PSM", data_dir)
