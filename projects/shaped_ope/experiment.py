"""Reward-shaping control variates for off-policy evaluation: configs and the entry point.

    python launch/run.py projects/shaped_ope                 # cpu config: the table + regime map
    python launch/run.py projects/shaped_ope --config smoke  # seconds, for tests
    python launch/reproduce.py projects/shaped_ope           # results/*.md, *.json, *.png

One run = every estimator on every problem of `problems`, at every n of `ns`, over `reps`
Monte-Carlo repetitions (the repetitions are the seeds), plus the chain regime map. The n values
are nested: repetition j uses the first n of the same n_max trajectories (common random numbers
across n; the repetitions themselves are independent).
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Annotated

import numpy as np

from projects.shaped_ope import evaluate, problems
from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveInt, Range
from shared.results import append_metrics, write_json
from shared.train import preemption


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # root seed of every sample of the run
    reps: Annotated[int, Range(2)] = 500  # Monte-Carlo repetitions per (problem, n)
    # trajectories per estimate (even: 2-fold cross-fit)
    ns: tuple[Annotated[int, Range(4)], ...] = (50, 200, 1000)
    problems: tuple[str, ...] = ("chain_sparse", "chain_dense", "icu_sepsis", "cancer")
    chain_states: Annotated[int, Range(2)] = 20  # N of the table's chains (horizon 2N)
    epsilon: Fraction = 0.5  # chain behaviour = (1 - eps) pi + eps uniform (spec: 0.2 or 0.5)
    icu_horizon: PositiveInt = 20  # ICU-Sepsis truncation H
    cancer_truth_rollouts: PositiveInt = 100_000  # on-policy rollouts for the cancer truth
    chunk_episodes: PositiveInt = 20_000  # episodes sampled at once (memory bound, ~140 MB on ICU)
    regime_map: bool = True  # also run the chain regime map (figure)
    regime_states: Annotated[int, Range(2)] = 20  # N of the regime-map chain
    regime_reps: Annotated[int, Range(2)] = 200  # repetitions per regime-map cell
    regime_n: Annotated[int, Range(4)] = 200  # trajectories per estimate in the regime map
    # reward noise sigma (rows of the map)
    regime_noise: tuple[NonNegativeFloat, ...] = (0.0, 0.1, 0.5)
    regime_sparsity: tuple[str, ...] = ("sparse", "mixed", "dense")  # reward tables (columns)

    def __post_init__(self):
        if any(n < 4 or n % 2 for n in self.ns) or self.regime_n % 2:
            raise ValueError(f"ns={self.ns}, regime_n={self.regime_n}: use even n >= 4")
        unknown = set(self.problems) - set(PROBLEMS)
        if unknown:
            raise ValueError(f"problems: unknown {sorted(unknown)}; choose from {list(PROBLEMS)}")
        if self.reps < 2 or self.regime_reps < 2:
            raise ValueError("reps and regime_reps must be >= 2 (a variance needs two values)")


PROBLEMS = ("chain_sparse", "chain_dense", "icu_sepsis", "cancer")

CONFIGS: dict[str, Config] = {
    # Seconds: tiny chains and cancer, few repetitions, a 2x2 regime map.
    "smoke": Config(
        reps=8,
        ns=(20, 40),
        problems=("chain_sparse", "cancer"),
        chain_states=6,
        cancer_truth_rollouts=2000,
        regime_states=6,
        regime_reps=6,
        regime_n=20,
        regime_noise=(0.0, 0.5),
        regime_sparsity=("sparse", "dense"),
    ),
    # The default: the spec's CPU-scale plan (n in {50, 200, 1000}, 500 repetitions).
    "cpu": Config(),
    # The spec's section-5 sizes: 1000 repetitions, n up to 1000, N = 20 chains.
    "paper": Config(reps=1000, ns=(50, 100, 500, 1000), regime_reps=1000, regime_n=500),
}


def build_problem(name: str, cfg: Config, sparsity: str | None = None) -> problems.Problem:
    if name.startswith("chain"):
        sparsity = sparsity or name.split("_")[1]
        return problems.chain_problem(cfg.chain_states, sparsity, cfg.epsilon)
    if name == "icu_sepsis":
        return problems.icu_problem(cfg.icu_horizon)
    return problems.cancer_problem(truth_rollouts=cfg.cancer_truth_rollouts)


def simulate(
    problem: problems.Problem,
    ns: tuple[int, ...],
    reps: int,
    seed: int,
    chunk_episodes: int,
    q_kind: str,
    noise: float = 0.0,
) -> dict[int, dict[str, np.ndarray]]:
    """Estimates {n: {estimator: [reps]}} of every estimator, sampled in chunks of repetitions."""
    n_max = max(ns)
    per_chunk = max(1, chunk_episodes // n_max)
    out: dict[int, dict[str, list]] = {n: {} for n in ns}
    for c, start in enumerate(range(0, reps, per_chunk)):
        r = min(per_chunk, reps - start)
        batch = problem.sample(seed * 100_003 + c, r, n_max, noise)
        for n in ns:
            sub = {k: v[:, :n] for k, v in batch.items()}
            for k, v in evaluate.estimate_all(problem, sub, q_kind).items():
                out[n].setdefault(k, []).append(v)
    return {n: {k: np.concatenate(v) for k, v in d.items()} for n, d in out.items()}


def summarize(values: np.ndarray, truth: float) -> dict[str, float]:
    """Bias, sd, MSE of estimates [R] with their standard errors over the R repetitions."""
    r = len(values)
    err = values - truth
    sd = float(values.std(ddof=1))
    return {
        "bias": float(err.mean()),
        "bias_se": sd / np.sqrt(r),
        "sd": sd,
        "sd_se": sd / np.sqrt(2 * (r - 1)),
        "mse": float((err**2).mean()),
        "mse_se": float((err**2).std(ddof=1) / np.sqrt(r)),
    }


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Runs every problem (and the regime map); writes estimates.npz and summary.json."""
    metrics: dict[str, float] = {}
    arrays: dict[str, np.ndarray] = {}
    summary: dict = {"problems": {}, "regime": []}
    for i, name in enumerate(cfg.problems):
        preemption.check(f"problem {name}")
        t0 = time.perf_counter()
        problem = build_problem(name, cfg)
        q_kind = "tabular" if problem.tabular is not None else "linear"
        est = simulate(problem, cfg.ns, cfg.reps, cfg.seed * 10 + i, cfg.chunk_episodes, q_kind)
        info = {"truth": problem.truth, "truth_se": problem.truth_se, "cells": {}}
        info["weight_second_moment"] = problem.weight_second_moment
        for n, by_est in est.items():
            for k, v in by_est.items():
                arrays[f"{name}/n{n}/{k}"] = v
                if k == "max_weight":
                    metrics[f"weights/{name}/n{n}/max"] = float(v.max())
                    metrics[f"weights/{name}/n{n}/median_of_rep_max"] = float(np.median(v))
                    continue
                if k == "mean_final_weight":
                    metrics[f"weights/{name}/n{n}/mean_final"] = float(v.mean())
                    continue
                s = summarize(v, problem.truth)
                info["cells"][f"n{n}/{k}"] = s
                metrics.update({f"{k}/{name}/n{n}/{m}": x for m, x in s.items()})
        info["seconds"] = time.perf_counter() - t0
        metrics[f"time/{name}/seconds"] = info["seconds"]
        summary["problems"][name] = info
        append_metrics(workdir, {"problem": name, "seconds": info["seconds"]})
        print(f"{name}: truth {problem.truth:.4f}, {info['seconds']:.0f} s", flush=True)
    if cfg.regime_map:
        t0 = time.perf_counter()
        summary["regime"] = regime_map(cfg)
        metrics["time/regime/seconds"] = time.perf_counter() - t0
        print(f"regime map: {metrics['time/regime/seconds']:.0f} s", flush=True)
    np.savez_compressed(workdir / "estimates.npz", **arrays)
    write_json(workdir / "summary.json", summary)
    return metrics


def regime_map(cfg: Config) -> list[dict]:
    """Chain cells over (sparsity, reward noise, Q-hat features): MSE of every estimator."""
    cells = []
    for j, sparsity in enumerate(cfg.regime_sparsity):
        cfg_chain = dataclasses.replace(cfg, chain_states=cfg.regime_states)
        problem = build_problem("chain", cfg_chain, sparsity)
        for k, noise in enumerate(cfg.regime_noise):
            for q_kind in ("tabular", "misspecified"):
                seed = cfg.seed * 1000 + 100 + 10 * j + k
                est = simulate(
                    problem, (cfg.regime_n,), cfg.regime_reps, seed, cfg.chunk_episodes,
                    q_kind, noise,
                )[cfg.regime_n]  # fmt: skip
                mse = {
                    e: summarize(v, problem.truth)
                    for e, v in est.items()
                    if e not in ("max_weight", "mean_final_weight", "DR-exact", "Hybrid-insample")
                }
                cells.append({"sparsity": sparsity, "noise": noise, "q": q_kind, "stats": mse})
    return cells
