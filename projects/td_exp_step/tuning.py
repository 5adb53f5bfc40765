"""The reported rows: each is a set of candidate schedules; tuned rows pick the candidate with the
lowest mean error on the tuning seeds and are reported on the (disjoint) evaluation seeds.

Selection is per (MRP, regime, T, metric): a schedule that is tuned for the value error may pick
another grid value than one tuned for the parameter error. A non-finite error (a diverged run)
counts as +inf on the tuning seeds; on the evaluation seeds it is reported, never dropped."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from projects.td_exp_step.schedules import Schedule


@dataclasses.dataclass(frozen=True)
class RowSpec:
    key: str  # metric-key name
    label: str  # table label
    member: Callable[[Schedule, float], bool]  # (schedule, gamma) -> is a candidate of this row
    markov_only: bool = False


def _theory(s: Schedule, gamma: float) -> bool:  # c' = 2 / (1 - gamma), Bhandari et al. 2018
    return abs(s.value - 2.0 / (1.0 - gamma)) < 1e-9


def row_specs(default_eta0: float, default_beta: float) -> tuple[RowSpec, ...]:
    rows = [
        RowSpec("const", "constant (tuned η)", lambda s, g: s.family == "constant"),
        RowSpec(
            "exp",
            "exponential (tuned η0, β)",
            lambda s, g: s.family == "exponential" and s.lam == 0,
        ),
        RowSpec(
            "exp_default",
            f"exponential, untuned (η0={default_eta0:g}, β={default_beta:g})",
            lambda s, g: (
                (s.family, s.value, s.beta, s.lam)
                == ("exponential", default_eta0, default_beta, 0.0)
            ),
        ),
    ]
    for scale, name in ((1.0, "true ω"), (10.0, "ω×10"), (0.1, "ω×0.1")):
        suffix = "" if scale == 1.0 else f"_x{scale:g}"
        rows.append(
            RowSpec(
                f"invt{suffix}",
                f"c/(ω(t+t0)), tuned c, {name}",
                lambda s, g, k=scale: s.family == "inv_t" and s.omega_scale == k,
            )
        )
    for scale, name in ((1.0, "true ω"), (10.0, "ω×10"), (0.1, "ω×0.1")):
        suffix = "" if scale == 1.0 else f"_x{scale:g}"
        rows.append(
            RowSpec(
                f"invt_theory{suffix}",
                f"c/(ω(t+t0)), c=2/(1−γ), {name}",
                lambda s, g, k=scale: s.family == "inv_t" and s.omega_scale == k and _theory(s, g),
            )
        )
    rows += [
        RowSpec(
            "sqrt_avg",
            "c/√(t+1) + Polyak-Ruppert averaging (tuned c)",
            lambda s, g: s.family == "inv_sqrt",
        ),
        RowSpec(
            "reg_exp",
            "regularized exponential (tuned η0, λ)",
            lambda s, g: s.family == "exponential" and s.lam > 0,
            markov_only=True,
        ),
    ]
    return tuple(rows)


def select(errors: np.ndarray, candidates: list[int], num_tune: int) -> tuple[int, np.ndarray]:
    """errors [N, K] (seeds 0..num_tune-1 tune, the rest evaluate) -> (chosen column, its
    evaluation errors [N - num_tune])."""
    if not candidates:
        raise ValueError("a row has no candidate schedule: check the grid of the config")
    tune = errors[:num_tune, candidates]
    score = np.where(np.isfinite(tune), tune, np.inf).mean(0)
    best = candidates[int(np.argmin(score))]
    return best, errors[num_tune:, best]
