"""Step-size schedules as one closed-form family, so every schedule runs in the same vmapped scan.

    eta_t = c * alpha^t / (t + t0)^p        t = 0, 1, ..., T - 1 (the step that makes theta_{t+1})

    constant           c = eta,             alpha = 1, p = 0
    exponential        c = eta0,            alpha = (beta / T)^(1/T), p = 0    (Reconstruction)
    inverse-t          c = c' / omega_u,    t0 = c' / omega_u, p = 1  (eta_0 = 1, needs omega)
    inverse-sqrt       c = c,               t0 = 1, p = 1/2, reported with Polyak-Ruppert averaging

Exponential, Reconstruction (the paper's constants are not known here): the form of Li, Zhuang and
Orabona (2021), eta_t = eta0 alpha^t with the horizon-dependent alpha = (beta/T)^(1/T), so that
eta_T = eta0 beta / T. alpha depends only on (beta, T): runs of different T are different
schedules, not prefixes of one. Alternatives considered: a warm-up of constant steps before the
decay, and alpha = (1/T)^(beta/T); neither is confirmed, so the plain form is used.

Inverse-t: eta_t = c' / (omega_u (t + t0)) with omega_u the omega the user believes (the true one,
or misspecified x10 / x0.1). t0 = c' / omega_u caps the first step at 1 (the largest step that is
safe with ||phi|| <= 1). Then eta_t = 1 / (1 + omega_u t / c'): it depends on c' / omega_u only, so
tuning c' on a grid can absorb a misspecified omega; the theory-set c' = 2 / (1 - gamma) (Bhandari,
Russo and Singal 2018, Theorem 2(c)) cannot.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np

Family = Literal["constant", "exponential", "inv_t", "inv_sqrt"]


@dataclasses.dataclass(frozen=True)
class Schedule:
    family: Family
    value: float  # eta (constant), eta0 (exponential), c' (inv_t), c (inv_sqrt)
    beta: float = 1.0  # exponential: eta_T = eta0 beta / T
    omega_scale: float = 1.0  # inv_t: omega_u = omega_scale * true omega
    lam: float = 0.0  # L2 regularization of regularized TD(0) (0: plain TD(0))

    def coefficients(self, horizon: int, omega: float) -> tuple[float, float, float, float]:
        """(c, log alpha, t0, p) of eta_t = c alpha^t / (t + t0)^p for a run of `horizon` steps."""
        if self.family == "constant":
            return self.value, 0.0, 1.0, 0.0
        if self.family == "exponential":
            return self.value, exponential_log_alpha(self.beta, horizon), 1.0, 0.0
        if self.family == "inv_t":
            omega_u = self.omega_scale * omega
            return self.value / omega_u, 0.0, self.value / omega_u, 1.0
        if self.family == "inv_sqrt":
            return self.value, 0.0, 1.0, 0.5
        raise ValueError(f"unknown schedule family {self.family!r}")


def exponential_log_alpha(beta: float, horizon: int) -> float:
    """log alpha with alpha = (beta / T)^(1/T); needs beta < T so that the steps decrease."""
    if not 0 < beta < horizon:
        raise ValueError(f"exponential schedule needs 0 < beta={beta} < T={horizon}")
    return math.log(beta / horizon) / horizon


def step_sizes(schedule: Schedule, horizon: int, omega: float, t: np.ndarray) -> np.ndarray:
    """eta_t at the (float64 numpy) times t: the reference the tests and figures use."""
    c, log_alpha, t0, p = schedule.coefficients(horizon, omega)
    t = np.asarray(t, np.float64)
    return c * np.exp(log_alpha * t) / (t + t0) ** p


def coefficient_arrays(
    schedules: list[Schedule], horizon: int, omega: float
) -> dict[str, np.ndarray]:
    """The coefficients of a list of schedules as arrays [K] (fed to the vmapped TD scan)."""
    coef = np.array([s.coefficients(horizon, omega) for s in schedules], np.float64)
    return {
        "c": coef[:, 0],
        "log_alpha": coef[:, 1],
        "t0": coef[:, 2],
        "p": coef[:, 3],
        "lam": np.array([s.lam for s in schedules], np.float64),
    }
