"""The tables this project reproduces (`python launch/reproduce.py projects/shaped_ope`).

One run of the `cpu` config holds everything: its Monte-Carlo repetitions are the seeds, so the
declared table has a single run seed and shows MSE only; the detailed table (bias, sd, MSE, each
± its standard error over the repetitions, and the largest importance weights) and the figures
are written from the same run by `figures.write_all` (FIGURES hook below).
"""

from projects.shaped_ope.evaluate import ESTIMATORS
from projects.shaped_ope.experiment import CONFIGS
from projects.shaped_ope.figures import write_all
from shared.tables import Column, Row, Section, Table

TITLES = {
    "chain_sparse": "Sparse chain (N = 20, goal reward only, eps = 0.5)",
    "chain_dense": "Dense chain (N = 20, +1/N per move right, eps = 0.5)",
    "icu_sepsis": "ICU-Sepsis (H = 20)",
    "cancer": "Cancer simulator (H = 30, dose w.p. 0.7 vs 0.5)",
}
ROW_NAMES = (*ESTIMATORS, "DR-exact")

MAIN = Table(
    name="main",
    title="MSE of each estimator (cpu config; detailed table with standard errors: details.md)",
    config="cpu",
    seeds=(0,),
    rows=tuple(Row(e, e) for e in ROW_NAMES),
    sections=tuple(
        Section(
            f"{TITLES[p]}: MSE",
            tuple(
                Column(f"n = {n}", f"{p}/n{n}/mse", higher_is_better=False)
                for n in CONFIGS["cpu"].ns
            ),
            digits=5,
        )
        for p in CONFIGS["cpu"].problems
    ),
    notes=(
        "MSE over the run's Monte-Carlo repetitions (500 per cell) against the exact truth "
        "(DP for the chains and ICU-Sepsis, 1e5 on-policy rollouts for cancer). A single run "
        "seed: the spread is given as standard errors in details.md. DR-exact uses the exact "
        "Q^pi (tabular problems only); nothing is clipped.",
    ),
)

TABLES = {"main": MAIN}
FIGURES = {"main": write_all}
