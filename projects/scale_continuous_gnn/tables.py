"""The tables this project reproduces (`python launch/reproduce.py projects/scale_continuous_gnn`):
cross-resolution transfer MAE and the embedding gap, 3 seeds of the cpu config, plus the gap
figure (FIGURES)."""

from __future__ import annotations

import pathlib

from projects.scale_continuous_gnn import figures
from projects.scale_continuous_gnn.models import MODELS
from shared.tables import Column, Row, Section, Table

FAMILIES = (("molecules", "molecules"), ("grids", "grids"))
TRAINED = ("gcn", "gin", "sage", "resolvent", "resolvent_k0")  # the cpu config's models

ROWS = tuple(
    Row(f"{label}: {MODELS[m].label}", f"{family}/{m}")
    for family, label in FAMILIES
    for m in TRAINED
) + tuple(
    Row(f"{label}: predict the train mean", f"{family}/train_mean") for family, label in FAMILIES
)

MAE = tuple(
    Column(f"train {a} → test {b}", f"{a}_to_{b}", higher_is_better=False)
    for a, b in (
        ("fine", "fine"),
        ("fine", "coarse"),
        ("coarse", "coarse"),
        ("coarse", "fine"),
        ("mixed", "fine"),
        ("mixed", "coarse"),
    )
)
GAP = tuple(
    Column(f"{kind}, λ={lam}", f"gap_{kind}@{lam}", higher_is_better=False)
    for kind in ("untrained", "trained")
    for lam in ("10", "100", "10000")
)

MAIN = Table(
    name="main",
    title="Train on one resolution, test on the other: MAE of a smooth graph-level target "
    "(fine = λ = 100), and the relative embedding gap ‖Φ(G_λ) − Φ(G_coarse)‖ / ‖Φ(G_coarse)‖",
    config="cpu",
    seeds=(0, 1, 2),
    rows=ROWS,
    compare=tuple(
        (f"{label}: {MODELS['resolvent'].label}", f"{label}: {MODELS[m].label}")
        for _, label in FAMILIES
        for m in ("gcn", "gin", "sage")
    ),
    sections=(
        Section("Test MAE (lower is better)", MAE, digits=3),
        Section(
            "Relative embedding gap on 100 test graphs (trained = trained on coarse)", GAP, digits=6
        ),
    ),
    notes=(
        "Target y = tr R(L_c) + Σ_c μ_c tanh(v·(R(L_c) x_c)) on the coarse graph (R = (L + I)^-1 "
        "of the node-weighted Laplacian), shared by both resolutions. The resolvent model, the "
        "node-weighted Laplacian and the target are Reconstructions (see README). Each seed draws "
        "its own graphs, split and initialization; mean ± std over 3 seeds. The paper reports no "
        "numbers for this synthetic setup, so there is no paper column.",
    ),
)

TABLES = {"main": MAIN}


def _figure(table, workdirs, out: pathlib.Path) -> list[pathlib.Path]:
    return [figures.gap_figure(figures.load(workdirs.values()), out / "gap_vs_lambda.png")]


FIGURES = {"main": _figure}
