"""Rehearsal of the `paper` config (shared/rehearsal.py): SMD in the Anomaly-Transformer layout
(`SMD_train.npy`, `SMD_test.npy`, `SMD_test_label.npy`; 38 channels) written small, read by
`shared.data.timeseries_files`; the paper's window of 100, a one-layer d = 16 TeamWork detector
trained 3 steps with a checkpoint every step, and the PCA baseline. TeamWork trains on one device
(no mesh).

    python launch/rehearse.py projects/teamwork
"""

from __future__ import annotations

import pathlib

import numpy as np

from shared.rehearsal import Rehearsal

CHANNELS, TRAIN, TEST, STEPS = 38, 400, 400, 3  # SMD machine-1-1: 38 channels, ~28k steps each
# TeamWork and the PCA baseline: the other neural methods differ in one coupling flag, and each
# costs two more compilations (training, scoring)
METHODS = ("teamwork", "pca")


def write_smd(directory: pathlib.Path) -> tuple[str, ...]:
    """Sines of three periods mixed into 38 channels, noise, and two anomalous stretches."""
    rng = np.random.default_rng(0)
    t = np.arange(TRAIN + TEST)
    base = np.stack([np.sin(2 * np.pi * t / p) for p in (10, 25, 50)], 1)
    x = base @ rng.normal(size=(3, CHANNELS)) + 0.1 * rng.normal(size=(len(t), CHANNELS))
    labels = np.zeros(TEST, np.int64)
    for start in (120, 300):
        labels[start : start + 15] = 1
        x[TRAIN + start : TRAIN + start + 15, :5] += 3.0
    smd = directory / "smd"
    smd.mkdir(parents=True, exist_ok=True)
    np.save(smd / "SMD_train.npy", x[:TRAIN].astype(np.float32))
    np.save(smd / "SMD_test.npy", x[TRAIN:].astype(np.float32))
    np.save(smd / "SMD_test_label.npy", labels)
    return (f"data_dir={str(smd)!r}",)


REHEARSAL = Rehearsal(
    data="SMD_{train,test,test_label}.npy from data_dir (Anomaly-Transformer layout)",
    write_data=write_smd,
    shrink=(
        f"methods={METHODS}",
        "model.d_model=16",
        "model.num_heads=2",
        "model.num_layers=1",
        "model.ff_dim=32",
        f"train.steps={STEPS}",
        "train.batch_size=8",
        "train.checkpoint_every=1",
        "role_max_lags=5",  # the BIC search over 1..window/2 lags costs seconds per channel
        "vus_window=10",
    ),
    checkpoints={"teamwork": STEPS},
)
