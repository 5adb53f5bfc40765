"""TD(0) with exponential step sizes ("Towards Parameter-Free Temporal Difference Learning").

    python launch/run.py projects/td_exp_step                  # cpu config (about 2 min, 2 cores)
    python launch/run.py projects/td_exp_step --config smoke   # seconds, for tests
    python launch/reproduce.py projects/td_exp_step            # the table and its 4 figures

One run = every (MRP, sampling regime, horizon T, schedule, seed): the seeds and the schedules are
vectorized inside one `lax.scan` per (MRP, regime, T), so one run holds all the seeds of a table.
Seeds 0..num_tune_seeds-1 choose each tuned schedule's grid value; the other seeds report it.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from typing import Annotated, Literal

import jax
import jax.numpy as jnp
import numpy as np

from projects.td_exp_step import problems, tuning
from projects.td_exp_step.schedules import Schedule, step_sizes
from projects.td_exp_step.td import run_td, sample_transitions
from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Range
from shared.results import append_metrics
from shared.train import preemption

MRP = Literal["garnet", "icu_sepsis"]
METRICS = ("param", "value", "param_reg")  # ||θ-θ*||², ||Φ(θ-θ*)||²_D, ||θ-θ_λ||²


@dataclasses.dataclass(frozen=True)
class GarnetConfig:
    num_states: PositiveInt = 100  # states of the random MRP
    branching: PositiveInt = 4  # successors per state (Dirichlet(1) probabilities)
    # discount (the spec also suggests 0.99: --set garnet.gamma=0.99)
    gamma: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.9
    feature_dim: PositiveInt = 8  # Gaussian features, each row of unit norm
    reward_noise: NonNegativeFloat = 0.5  # std of N(0, σ_r²) added to every sampled reward
    # the one Garnet instance (and its features); the run seeds vary sampling only
    seed: NonNegativeInt = 0


@dataclasses.dataclass(frozen=True)
class GridConfig:
    eta_log2: tuple[int, ...] = tuple(range(-8, 1))  # constant η and exponential η0: 2^k
    exp_betas: tuple[PositiveFloat, ...] = (1.0, 10.0)  # exponential: η_T = η0 β / T
    inv_t_log2: tuple[int, ...] = tuple(range(-4, 5))  # inverse-t c' = 2/(1-γ) · 2^k
    # ω used by inverse-t: true, x10, x0.1
    omega_scales: tuple[PositiveFloat, ...] = (1.0, 10.0, 0.1)
    sqrt_log2: tuple[int, ...] = tuple(range(-8, 1))  # inverse-sqrt c = 2^k (with averaging)
    # regularized TD (Markovian regime)
    reg_lambdas: tuple[NonNegativeFloat, ...] = (1e-4, 1e-3, 1e-2)
    reg_betas: tuple[PositiveFloat, ...] = (1.0,)  # β of the regularized exponential schedule
    # the untuned exponential row: fixed before any run, not tuned
    default_eta0: PositiveFloat = 1.0
    default_beta: PositiveFloat = 1.0


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # root of every sampling key
    mrps: tuple[MRP, ...] = ("garnet", "icu_sepsis")  # problems of the run
    regimes: tuple[Literal["iid", "markov"], ...] = ("iid", "markov")  # sampling models
    # T (each its own schedule)
    horizons: tuple[PositiveInt, ...] = (1000, 3000, 10000, 30000, 100000)
    num_tune_seeds: PositiveInt = 10  # seeds that choose the tuned grid values
    num_eval_seeds: Annotated[int, Range(2)] = 30  # fresh seeds that report them
    noise_ablation: bool = True  # also Garnet i.i.d. with σ_r = 0 (figure c)
    # discount of the continuing ICU-Sepsis chain
    icu_gamma: Annotated[float, Range(0.0, 1.0, high_open=True)] = 0.95
    garnet: GarnetConfig = GarnetConfig()
    grid: GridConfig = GridConfig()

    def __post_init__(self):
        if self.num_tune_seeds < 1 or self.num_eval_seeds < 2:
            raise ValueError("num_tune_seeds must be >= 1 and num_eval_seeds >= 2")
        if not self.horizons or min(self.horizons) <= max(self.grid.exp_betas + (1.0,)):
            raise ValueError("every horizon must exceed every exponential beta (eta_T < eta0)")
        if not set(self.regimes) <= {"iid", "markov"} or not self.regimes:
            raise ValueError(f"regimes={self.regimes} must be a non-empty subset of iid, markov")


CONFIGS: dict[str, Config] = {
    # Seconds: both MRPs and regimes, tiny horizons, 2 grid values; every code path.
    "smoke": Config(
        horizons=(100, 300),
        num_tune_seeds=2,
        num_eval_seeds=3,
        grid=GridConfig(eta_log2=(-2, 0), inv_t_log2=(0, 1), sqrt_log2=(-1,), reg_lambdas=(1e-2,)),
    ),
    # The default: the spec's CPU-scale plan (T up to 1e5, 10 tuning + 30 evaluation seeds).
    "cpu": Config(),
    # Paper-style scale (the paper's own setup is not known): T up to 1e6, 100 evaluation seeds.
    "paper": Config(horizons=(1000, 10000, 100000, 1000000), num_tune_seeds=20, num_eval_seeds=100),
}


def build_problem(name: str, cfg: Config) -> problems.LinearTDProblem:
    g = cfg.garnet
    if name.startswith("garnet"):
        noise = 0.0 if name == "garnet_noiseless" else g.reward_noise
        return problems.garnet_problem(
            g.num_states, g.branching, g.gamma, g.feature_dim, noise, g.seed
        )
    if name == "icu_sepsis":
        return problems.icu_sepsis_problem(cfg.icu_gamma)
    raise ValueError(f"unknown MRP {name!r}; choose garnet or icu_sepsis")


def build_schedules(grid: GridConfig, gamma: float, regime: str) -> list[Schedule]:
    """Every candidate schedule of one (MRP, regime), the untuned rows' schedules included."""
    etas = [2.0**k for k in grid.eta_log2]
    theory = 2.0 / (1.0 - gamma)
    out = [Schedule("constant", e) for e in etas]
    out += [Schedule("exponential", e, b) for b in grid.exp_betas for e in etas]
    out.append(Schedule("exponential", grid.default_eta0, grid.default_beta))
    for scale in grid.omega_scales:
        out += [Schedule("inv_t", theory * 2.0**k, omega_scale=scale) for k in grid.inv_t_log2]
        out.append(Schedule("inv_t", theory, omega_scale=scale))
    out += [Schedule("inv_sqrt", 2.0**k) for k in grid.sqrt_log2]
    if regime == "markov":
        out += [
            Schedule("exponential", e, b, lam=lam)
            for lam in grid.reg_lambdas
            for b in grid.reg_betas
            for e in etas
        ]
    return list(dict.fromkeys(out))  # drop duplicates, keep order


def final_iterates(
    prob: problems.LinearTDProblem, schedules: list[Schedule], s, s2, noise, horizon: int
) -> np.ndarray:
    """θ_T [N, K, k] (float64 copy of the float32 iterates) of every seed and schedule."""
    t = np.arange(horizon)
    out = np.empty((s.shape[0], len(schedules), prob.phi.shape[1]))
    for average in (False, True):  # only the inverse-sqrt baseline averages its iterates
        idx = [i for i, sc in enumerate(schedules) if (sc.family == "inv_sqrt") == average]
        if not idx:
            continue
        eta = np.stack([step_sizes(schedules[i], horizon, prob.omega, t) for i in idx], 1)
        lam = np.array([schedules[i].lam for i in idx])
        theta = run_td(
            jnp.asarray(prob.phi, jnp.float32),
            jnp.asarray(prob.r, jnp.float32),
            prob.gamma,
            s[:, :horizon],
            s2[:, :horizon],
            noise[:, :horizon],
            jnp.asarray(eta, jnp.float32),
            jnp.asarray(lam, jnp.float32),
            average=average,
        )
        out[:, idx] = np.asarray(theta, np.float64)
    if not np.isfinite(out).all():
        bad = (~np.isfinite(out).all(-1)).sum()
        print(f"note: {bad} diverged (seed, schedule) runs at T={horizon}")
    return out


def errors(prob: problems.LinearTDProblem, schedules: list[Schedule], theta: np.ndarray) -> dict:
    """{metric: [N, K]}: ||θ-θ*||², (θ-θ*)ᵀ G (θ-θ*), ||θ-θ_λ||² (θ_λ = θ* when λ = 0)."""
    diff = theta - prob.theta_star
    theta_lam = np.stack([prob.theta_reg(sc.lam) for sc in schedules])  # [K, k]
    return {
        "param": (diff**2).sum(-1),
        "value": np.einsum("nKi,ij,nKj->nK", diff, prob.gram, diff),
        "param_reg": ((theta - theta_lam) ** 2).sum(-1),
    }


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """All (MRP, regime, T) cells; writes errors.npz, schedules.json, problems.json and
    summary.json (the tuned rows) into workdir; returns evaluation-seed means."""
    root = jax.random.key(cfg.seed)
    n = cfg.num_tune_seeds + cfg.num_eval_seeds
    cells = [(m, r) for m in cfg.mrps for r in cfg.regimes]
    if cfg.noise_ablation and "garnet" in cfg.mrps:
        cells.append(("garnet_noiseless", "iid"))
    arrays, sched_json, prob_json, summary = {}, {}, {}, []
    metrics: dict[str, float] = {}
    for cell, (name, regime) in enumerate(cells):
        preemption.check(f"cell {name}/{regime}")
        t0 = time.perf_counter()
        prob = build_problem(name, cfg)
        schedules = build_schedules(cfg.grid, prob.gamma, regime)
        key_s, key_r = jax.random.split(jax.random.fold_in(root, cell))
        s, s2 = sample_transitions(key_s, prob.P, prob.d, regime, n, max(cfg.horizons))
        noise = prob.reward_noise * jax.random.normal(key_r, s.shape, jnp.float32)
        sched_json[f"{name}/{regime}"] = [dataclasses.asdict(sc) for sc in schedules]
        prob_json[name] = {
            "omega": prob.omega,
            # the contraction of the expected TD update: θ - θ* shrinks at least like
            # (1 - η λ) per step for small η, with λ this smallest eigenvalue
            "a_sym_min": float(np.linalg.eigvalsh((prob.A + prob.A.T) / 2)[0]),
            "theta_star_norm": float(np.linalg.norm(prob.theta_star)),
            "features": prob.phi.shape[1],
            "states": prob.phi.shape[0],
            "gamma": prob.gamma,
            "reward_noise": prob.reward_noise,
        }
        for horizon in cfg.horizons:
            errs = errors(prob, schedules, final_iterates(prob, schedules, s, s2, noise, horizon))
            for metric, e in errs.items():
                arrays[f"{name}/{regime}/{horizon}/{metric}"] = e
            for row in tuning.row_specs(cfg.grid.default_eta0, cfg.grid.default_beta):
                if row.markov_only and regime != "markov":
                    continue
                cand = [i for i, sc in enumerate(schedules) if row.member(sc, prob.gamma)]
                for metric in ("param", "value"):
                    best, vals = tuning.select(errs[metric], cand, cfg.num_tune_seeds)
                    summary.append(
                        {
                            "mrp": name,
                            "regime": regime,
                            "T": horizon,
                            "row": row.key,
                            "label": row.label,
                            "metric": metric,
                            "schedule": dataclasses.asdict(schedules[best]),
                            "index": best,
                            "values": vals.tolist(),
                            # the same runs measured against θ_λ (regularized rows)
                            "values_reg": errs["param_reg"][cfg.num_tune_seeds :, best].tolist(),
                        }
                    )
                    metrics[f"{name}/{regime}/T{horizon}/{row.key}/{metric}"] = float(np.mean(vals))
        append_metrics(workdir, {"cell": f"{name}/{regime}", "seconds": time.perf_counter() - t0})
    np.savez_compressed(workdir / "errors.npz", **arrays)
    (workdir / "schedules.json").write_text(json.dumps(sched_json) + "\n")
    (workdir / "problems.json").write_text(json.dumps(prob_json, indent=2) + "\n")
    (workdir / "summary.json").write_text(json.dumps(summary) + "\n")
    return metrics
