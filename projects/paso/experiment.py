"""PASO (step-parallel optimization): sequential Adam vs PASO windows on one problem.

    python launch/run.py projects/paso                              # cpu config: MNIST MLP
    python launch/run.py projects/paso --set problem=ackley           # another problem
    python launch/run.py projects/paso --config smoke               # seconds, for tests
    python launch/reproduce.py projects/paso                        # tables steps + wallclock

One run = one problem and seed: the sequential trajectory, then PASO with every window P in
`windows`, each compiled first and then timed. Reported per method: the held-out metric, K, T/K,
gradient evaluations per step, max ‖θ̂_t − θ_t‖∞ over checkpoint steps, execution seconds.
"""

from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Literal

import jax
import numpy as np
from tqdm import tqdm

from projects.paso import problems
from projects.paso.diffusion import DiffusionConfig, diffusion_problem
from projects.paso.optimizers import OPTIMIZERS, OptimizerName, make_optimizer
from projects.paso.paso import PasoConfig, paso, sequential
from shared.config import Fraction, NonNegativeFloat, NonNegativeInt, PositiveInt
from shared.results import append_metrics, is_writer
from shared.train import preemption

ProblemName = Literal["ackley", "mnist_mlp", "llama", "diffusion"]


@dataclasses.dataclass(frozen=True)
class Config:
    seed: NonNegativeInt = 0  # init, data order and noise of the problem
    problem: ProblemName = "mnist_mlp"  # which problem this run optimizes
    # the optax optimizer of the trajectory (its lr is `<problem>.lr`); the paper's runs use Adam
    optimizer: OptimizerName = "adam"
    momentum: Fraction = 0.9  # heavy-ball coefficient of optimizer='momentum' (torch SGD)
    windows: tuple[PositiveInt, ...] = (4, 8, 16)  # PASO window sizes P (one solve each)
    # initial tolerance (official default), scale 1e6 · mean sq. difference
    tol: NonNegativeFloat = 1e-5
    ema_decay: Fraction = 0.999  # tolerance EMA decay (official llm_v2 / cv_v2 default)
    agg: Literal["mean", "middle"] = "mean"  # error aggregate of the EMA (cv_v2: mean)
    # windows also solved with τ fixed at `tol` (ema_decay = 1): how much of T/K the EMA buys
    fixed_tol_windows: tuple[PositiveInt, ...] = (8,)
    num_checkpoints: PositiveInt = 20  # evenly spaced steps where θ̂_t is compared with θ_t
    devices: NonNegativeInt = 1  # devices of the window mesh axis (1: vmap on one; 0: all devices)
    ackley: problems.AckleyConfig = problems.AckleyConfig()
    mnist_mlp: problems.MLPConfig = problems.MLPConfig()
    llama: problems.LMConfig = problems.LMConfig()
    diffusion: DiffusionConfig = DiffusionConfig()

    def __post_init__(self):
        if not self.windows or min(self.windows + self.fixed_tol_windows) < 1:
            raise ValueError(
                f"windows={self.windows} must be a non-empty tuple of sizes >= 1 "
                f"(fixed_tol_windows={self.fixed_tol_windows} too)"
            )
        if self.agg not in ("mean", "middle"):
            raise ValueError(f"agg={self.agg!r}: choose 'mean' or 'middle'")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer={self.optimizer!r}: choose one of {OPTIMIZERS}")
        if self.problem not in ("ackley", "mnist_mlp", "llama", "diffusion"):
            raise ValueError(
                f"problem={self.problem!r}: choose ackley, mnist_mlp, llama or diffusion"
            )
        if self.devices < 0:
            raise ValueError(f"devices={self.devices} must be >= 0 (0: all devices)")
        PasoConfig(max(self.windows), self.tol, self.ema_decay, self.agg)  # validates the rest

    @property
    def steps(self) -> int:
        return getattr(self, self.problem).steps


CONFIGS: dict[str, Config] = {
    # Seconds: a 30-step MLP on 512 MNIST images, one adaptive and one fixed-τ window.
    "smoke": Config(
        windows=(4,),
        num_checkpoints=5,
        mnist_mlp=problems.MLPConfig(steps=30, train_size=512, test_size=512),
    ),
    # The default: one problem at table scale (the tables override `problem`).
    "cpu": Config(),
    # Llama-3.2-1B dimensions on the Wikipedia text shards, P = 8 window slots sharded over all
    # devices, constant-LR Adam and the official llm_v2 defaults (tol 1e-5, EMA 0.999, 'median'
    # = the middle error). Needs 8+ accelerators; the tests only build it with eval_shape.
    "paper": Config(
        problem="llama",
        windows=(8,),
        fixed_tol_windows=(),
        agg="middle",
        devices=0,
        num_checkpoints=10,
        llama=problems.LMConfig(
            size="llama-3.2-1b", corpus="wikipedia", seq_len=512, batch_size=8, lr=1e-5, steps=1000
        ),
    ),
}


def build_problem(cfg: Config) -> problems.Problem:
    """The problem of `cfg.problem`, optimized by `cfg.optimizer` at the problem's lr."""
    if cfg.problem == "ackley":
        prob = problems.ackley_problem(cfg.ackley, cfg.seed)
    elif cfg.problem == "mnist_mlp":
        prob = problems.mlp_problem(cfg.mnist_mlp, cfg.seed)
    elif cfg.problem == "llama":
        prob = problems.llama_problem(cfg.llama, cfg.seed)
    else:
        prob = diffusion_problem(cfg.diffusion, cfg.seed)
    lr = getattr(cfg, cfg.problem).lr
    return prob._replace(tx=make_optimizer(cfg.optimizer, lr, cfg.momentum))


def window_mesh(devices: int) -> jax.sharding.Mesh | None:
    """None (vmap on one device) for devices=1, else a 1-D Auto mesh named 'window'."""
    n = len(jax.devices()) if devices == 0 else devices
    if n == 1:
        return None
    if n > len(jax.devices()):
        raise ValueError(f"devices={devices} but only {len(jax.devices())} devices are visible")
    auto = (jax.sharding.AxisType.Auto,)
    return jax.make_mesh((n,), ("window",), axis_types=auto, devices=jax.devices()[:n])


def checkpoint_steps(T: int, n: int) -> tuple[int, ...]:
    return tuple(sorted(set(np.linspace(0, T, n + 1).round().astype(int).tolist())))


def compile_and_time(fn, *args):
    """(outputs, execution seconds, compile seconds) of jit(fn)(*args)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    t1 = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - t1, t1 - t0


def max_distance(a, b) -> float:
    """max over checkpoints and parameters of |a − b| (stacked checkpoints [C, ...])."""
    return float(max(np.max(np.abs(np.asarray(x) - np.asarray(y))) for x, y in zip(a, b)))


def relative_distance(a, b) -> float:
    """‖a − b‖₂ / ‖b‖₂ over all parameters (θ̂_T against θ_T)."""
    num = sum(
        float(np.sum((np.asarray(x) - np.asarray(y)) ** 2))
        for x, y in zip(*map(jax.tree.leaves, (a, b)))
    )
    den = sum(float(np.sum(np.asarray(y) ** 2)) for y in jax.tree.leaves(b))
    return float(np.sqrt(num / den))


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Sequential and PASO solves of one problem; writes anchors.npz (accepted steps after each
    outer iteration, per window) into workdir and returns flat metrics."""
    prob = build_problem(cfg)
    T, name = cfg.steps, prob.name
    ckpts = checkpoint_steps(T, cfg.num_checkpoints)
    mesh = window_mesh(cfg.devices)
    tx, g = prob.tx, prob.grad_fn

    def seq_fn(p, d):
        return sequential(tx, g, p, d, T, checkpoint_steps=ckpts)

    bar = tqdm(
        total=1 + len(cfg.windows) + len(cfg.fixed_tol_windows), desc=f"paso/{name}", leave=False
    )
    (theta, _, seq_cks), secs, comp = compile_and_time(seq_fn, prob.params, prob.data)
    bar.update()
    ref = prob.evaluate(theta)
    metrics = {
        f"{name}/seq/metric": ref["metric"],
        f"{name}/seq/K": float(T),
        f"{name}/seq/speedup": 1.0,
        f"{name}/seq/evals_per_step": 1.0,
        f"{name}/seq/max_dist": 0.0,
        f"{name}/seq/rel_dist": 0.0,
        f"{name}/seq/seconds": secs,
        f"{name}/seq/wall_speedup": 1.0,
    }
    append_metrics(workdir, {"method": "seq", "seconds": secs, "compile_seconds": comp, **ref})
    seq_cks = jax.tree.leaves(seq_cks)
    anchors = {}
    solves = [(P, cfg.ema_decay, f"paso{P}") for P in cfg.windows]
    solves += [(P, 1.0, f"paso{P}_fixed") for P in cfg.fixed_tol_windows]
    for P, decay, label in solves:
        preemption.check(f"solve {label}")
        pcfg = PasoConfig(P, cfg.tol, decay, cfg.agg)

        def paso_fn(p, d, pcfg=pcfg):
            return paso(tx, g, p, d, T, pcfg, mesh=mesh, checkpoint_steps=ckpts)

        res, psecs, pcomp = compile_and_time(paso_fn, prob.params, prob.data)
        bar.update()
        out = prob.evaluate(res.params)
        K, evals = int(res.iterations), int(res.grad_evals)
        if not K <= T:  # the paper's guarantee; a violation is a bug, never a result
            raise RuntimeError(f"{name} {label}: K={K} > T={T}")
        key = f"{name}/{label}"
        metrics |= {
            f"{key}/metric": out["metric"],
            f"{key}/K": float(K),
            f"{key}/speedup": T / K,
            f"{key}/evals_per_step": evals / T,
            f"{key}/max_dist": max_distance(jax.tree.leaves(res.checkpoints), seq_cks),
            f"{key}/rel_dist": relative_distance(res.params, theta),
            f"{key}/seconds": psecs,
            f"{key}/wall_speedup": secs / psecs,
        }
        anchors[label] = np.asarray(res.anchors[: K + 1])
        append_metrics(
            workdir,
            {"method": label, "K": K, "grad_evals": evals, "seconds": psecs,
             "compile_seconds": pcomp, "final_tol": float(res.tol), **out},
        )  # fmt: skip
    bar.close()
    if is_writer():
        np.savez(workdir / "anchors.npz", T=T, **anchors)
    return metrics
