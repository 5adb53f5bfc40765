"""SCALE vs AdamW and other optimizers: LLaMA pretraining at a fixed token budget.

    python launch/run.py projects/scale --set optimizer=scale     # cpu config, LR by its sweep
    python launch/run.py projects/scale --config smoke             # seconds, for tests
    python launch/reproduce.py projects/scale                      # every table (+ figures)

One run = one optimizer and seed. With `lr=0` the run first chooses its peak LR by a sweep (its
grid, `sweep_steps` steps, seed `sweep_seed`) inside its own run directory: every seed of a table
makes the same choice (same grid, same sweep seed), and the sweep is covered by the run's code
fingerprint; `lr_from` borrows another optimizer's choice (the ablation variants).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import pathlib
import time
from typing import Literal

import jax
import numpy as np
from flax import nnx

from projects.scale import data as scale_data
from shared.config import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from shared.distributed import data_mesh
from shared.models.llama import SIZES, Llama, LlamaConfig, count_params
from shared.optim import NAMES, OptimizerOptions, make_optimizer, optimizer_memory
from shared.results import is_writer
from shared.train import NonFiniteLossError
from shared.train.lm import LMTrainConfig, evaluate_lm, train_lm

Optimizer = Literal[NAMES]  # type: ignore[valid-type]

# Peak-LR grids (log-spaced by ~3.2x), extended at an edge when the best value sits there.
DEFAULT_GRIDS: dict[str, tuple[float, ...]] = {
    "adamw": (3.16e-3, 1e-2, 3.16e-2),
    "sgd": (0.316, 1.0, 3.16),
    "sgd_momentum": (0.1, 0.316, 1.0),
    "sgd_adam1d": (0.316, 1.0, 3.16),
    "colnorm_sgd": (1e-2, 3.16e-2, 0.1),
    "scale": (1e-2, 3.16e-2, 0.1),
    "momentum_all": (1e-2, 3.16e-2, 0.1),
    "scale_per_input": (1e-2, 3.16e-2, 0.1),
    "scale_l2": (0.1, 0.316, 1.0),
    "muon": (3.16e-3, 1e-2, 3.16e-2),
    "galore": (3.16e-3, 1e-2, 3.16e-2),
    "apollo_mini": (1e-3, 3.16e-3, 1e-2),
}


@dataclasses.dataclass(frozen=True)
class Config:
    optimizer: Optimizer = "scale"  # shared.optim.NAMES
    lr: NonNegativeFloat = 0.0  # peak LR; 0 chooses it by the sweep below
    lr_from: str = ""  # take this optimizer's swept LR instead of sweeping (ablation variants)
    lr_scale: PositiveFloat = 1.0  # multiplies a borrowed LR (L2 ablation: sqrt(dim), as the spec)
    sweep_lrs: tuple[PositiveFloat, ...] = ()  # the grid; () means DEFAULT_GRIDS[optimizer]
    sweep_steps: PositiveInt = 75  # steps of each sweep run (half of `steps`)
    sweep_seed: NonNegativeInt = 0  # one seed for the sweep
    sweep_extensions: NonNegativeInt = 1  # extra grid points past an edge that stays best
    grid_scale: PositiveFloat = 1.0  # multiplies every default grid (a bigger model: lower LRs)
    steps: PositiveInt = 150  # optimizer steps of the reported run
    batch_size: PositiveInt = 16  # sequences per step
    seq_len: PositiveInt = 64  # tokens per sequence
    dim: PositiveInt = 64  # model width
    num_layers: PositiveInt = 2  # decoder blocks
    num_heads: PositiveInt = 4  # attention heads (no grouping)
    ffn_dim: PositiveInt = 172  # SwiGLU width
    vocab_size: NonNegativeInt = 0  # 0: the tokenizer's
    param_dtype: Literal["float32", "bfloat16"] = "float32"  # the paper keeps everything in bf16
    data: Literal["wikipedia", "shakespeare", "c4"] = "wikipedia"  # training text
    tokenizer: Literal["byte", "t5"] = "byte"  # t5: local sentencepiece file (paper)
    data_dir: str = ""  # c4: folder of local JSON-lines shards; t5: holds spiece.model
    eval_every: NonNegativeInt = 25  # steps between validation points of the loss curve
    eval_windows: PositiveInt = 64  # validation windows per curve point
    final_eval_windows: PositiveInt = 512  # validation windows of the final perplexity (32k tokens)
    adam_lr: PositiveFloat = 0.02  # SCALE's 1-D AdamW LR (official default)
    galore_rank: PositiveInt = 16  # GaLore rank (dim / 4, as 128 for the 60M model's 512)
    projection_gap: PositiveInt = 200  # GaLore / APOLLO projection refresh interval (official)
    sharding: Literal["none", "data", "fsdp"] = "none"  # parameter sharding over all devices
    mode: Literal["train", "memory"] = "train"  # memory: paper-size state bytes only, no training
    seed: NonNegativeInt = 0  # init and data order

    def __post_init__(self):
        if self.lr < 0:
            raise ValueError(f"lr={self.lr} must be >= 0 (0 chooses it by the sweep)")
        if self.lr_from and self.lr_from not in NAMES:
            raise ValueError(f"lr_from={self.lr_from!r} must be '' or one of {NAMES}")
        if self.lr == 0 and not self.lr_from and not self.grid():
            raise ValueError(f"optimizer={self.optimizer!r}: set lr or sweep_lrs (no grid)")
        if self.steps < 1 or self.sweep_steps < 1 or self.batch_size < 1:
            raise ValueError("steps, sweep_steps and batch_size must be positive")
        if self.dim % self.num_heads:
            raise ValueError(f"dim={self.dim} must be divisible by num_heads={self.num_heads}")
        if self.data == "c4" and self.tokenizer != "t5":
            raise ValueError("data='c4' needs tokenizer='t5' (the official T5 tokenizer)")

    def grid(self) -> tuple[float, ...]:
        if self.sweep_lrs:
            return self.sweep_lrs
        return tuple(lr * self.grid_scale for lr in DEFAULT_GRIDS.get(self.optimizer, ()))


CONFIGS: dict[str, Config] = {
    # Seconds: fixed LR (the sweep has its own test), one small block.
    "smoke": Config(
        lr=0.03,
        sweep_lrs=(1e-2, 3e-2),
        sweep_steps=4,
        steps=6,
        batch_size=4,
        seq_len=32,
        dim=32,
        num_layers=1,
        num_heads=2,
        ffn_dim=64,
        eval_every=3,
        eval_windows=8,
        final_eval_windows=16,
        galore_rank=4,
        projection_gap=4,
    ),
    # ~124k parameters, 150 steps x 16 x 64 = 154k tokens: far below the paper's scale.
    "cpu": Config(),
    # The spec's CPU plan, sized to 90 min on 2 cores: ~0.86M parameters (dim 128, 4 layers,
    # SwiGLU 344, untied head), 3,000 steps of 8 x 128 tokens (the spec's batch 32 would take
    # ~4x longer). Each LR from a sweep at 300 steps (10%) that may walk two points past an edge,
    # on the default grids moved one point down: a first try found AdamW's best at 1e-3 and
    # SGD's at 0.1, both below the `cpu` grids.
    "long": Config(
        steps=3000,
        sweep_steps=300,
        sweep_extensions=2,
        grid_scale=0.316,
        batch_size=8,
        seq_len=128,
        dim=128,
        num_layers=4,
        num_heads=4,
        ffn_dim=344,
        eval_every=250,
        galore_rank=32,
    ),
    # Parameter / optimizer-state bytes of the paper's 60M..7B models (shapes only, bf16).
    "memory": Config(lr=1e-3, mode="memory", param_dtype="bfloat16"),
    # Official 130M script: C4, T5 tokenizer, seq 256, batch 512, 20k steps, lr 1e-3, bf16.
    "paper": Config(
        lr=1e-3,
        steps=20_000,
        batch_size=512,
        seq_len=256,
        dim=768,
        num_layers=12,
        num_heads=12,
        ffn_dim=2048,
        vocab_size=32_000,
        param_dtype="bfloat16",
        data="c4",
        tokenizer="t5",
        data_dir="data/c4",
        eval_every=1000,
        eval_windows=512,
        final_eval_windows=40_000,  # ~10M tokens, as the official evaluation
        galore_rank=256,
        sharding="data",
    ),
}


def model_config(cfg: Config, vocab: int) -> LlamaConfig:
    return LlamaConfig(
        vocab_size=cfg.vocab_size or vocab,
        dim=cfg.dim,
        num_layers=cfg.num_layers,
        num_heads=cfg.num_heads,
        num_kv_heads=cfg.num_heads,
        ffn_dim=cfg.ffn_dim,
        max_seq_len=cfg.seq_len,
        dtype=cfg.param_dtype,
    )


def build_model(cfg: Config, vocab: int, seed: int) -> Llama:
    model = Llama(model_config(cfg, vocab), rngs=nnx.Rngs(seed))
    if cfg.param_dtype != "float32":  # the paper's pure-bf16 runs: no float32 master copy
        params = nnx.state(model, nnx.Param)
        nnx.update(model, jax.tree.map(lambda x: x.astype(cfg.param_dtype), params))
    if cfg.sharding != "none":
        from shared.models.llama_sharding import shard_llama

        shard_llama(model, data_mesh(), cfg.sharding)
    return model


def optimizer_for(cfg: Config, name: str, lr: float, steps: int):
    opts = OptimizerOptions(
        adam_lr=cfg.adam_lr,
        galore_rank=cfg.galore_rank,
        projection_gap=cfg.projection_gap,
        seed=cfg.seed,
    )
    return make_optimizer(name, lr, steps, opts)


def abstract_memory(cfg: Config, vocab: int, name: str | None = None):
    """Exact parameter/state bytes of `name` (default cfg.optimizer) without allocating."""
    abstract = nnx.eval_shape(lambda: Llama(model_config(cfg, vocab), rngs=nnx.Rngs(0)))
    params = nnx.state(abstract, nnx.Param)
    tx = optimizer_for(cfg, name or cfg.optimizer, cfg.lr or 1e-3, cfg.steps)
    return optimizer_memory(tx, params, cfg.param_dtype)


# GaLore ranks of the official scripts per size (APOLLO-Mini is rank 1 at every size).
PAPER_SIZES = {"60m": 128, "130m": 256, "350m": 256, "1b": 512, "7b": 1024}


def memory_run(cfg: Config) -> dict[str, float]:
    """'<optimizer>/<size>_{params,state,total}_gb' for the paper's sizes (1 GB = 1e9 bytes)."""
    out = {}
    for size, rank in PAPER_SIZES.items():
        mcfg = dataclasses.replace(SIZES[size], dtype=cfg.param_dtype)
        abstract = nnx.eval_shape(lambda m=mcfg: Llama(m, rngs=nnx.Rngs(0)))
        params = nnx.state(abstract, nnx.Param)
        opts = OptimizerOptions(adam_lr=cfg.adam_lr, galore_rank=rank)
        mem = optimizer_memory(make_optimizer(cfg.optimizer, 1e-3, 1000, opts), params, "bfloat16")
        out[f"{size}_params_gb"] = mem.param_bytes / 1e9
        out[f"{size}_state_gb"] = mem.state_bytes / 1e9
        out[f"{size}_total_gb"] = mem.total_bytes / 1e9
    return {f"{cfg.optimizer}/{k}": v for k, v in out.items()}


def _train(cfg, data, name, lr, steps, seed, workdir=None):
    """One training run -> (val loss history, final val loss, tokens/s)."""
    model = build_model(cfg, data.vocab_size, seed)
    tcfg = LMTrainConfig(
        steps=steps,
        batch_size=cfg.batch_size,
        lr=lr,
        seed=seed,
        eval_every=min(cfg.eval_every, steps),
        eval_windows=cfg.eval_windows,
    )
    tx = optimizer_for(cfg, name, lr, steps)
    t0 = time.perf_counter()
    probe = data.val[: cfg.eval_windows]
    # The reported run (with a workdir) stops if it reaches the uniform model's loss; a sweep
    # point may, and then simply loses.
    uniform = math.log(data.vocab_size) if workdir is not None else None
    mesh = None if cfg.sharding == "none" else data_mesh()  # batches split over every device
    history = train_lm(
        model, data.train, probe, tcfg, tx=tx, workdir=workdir, uniform_loss=uniform, mesh=mesh
    )
    seconds = time.perf_counter() - t0
    final = evaluate_lm(model, data.val[: cfg.final_eval_windows], cfg.batch_size)
    rate = steps * cfg.batch_size * cfg.seq_len / seconds
    if workdir is not None and (workdir / "metrics.jsonl").exists():
        rates = [
            r["items_per_s"]
            for r in map(json.loads, (workdir / "metrics.jsonl").read_text().splitlines())
            if "items_per_s" in r
        ]
        if len(rates) > 1:  # the first window includes compilation
            rate = float(np.median(rates[1:]))
    return history, final, rate


def choose_lr(cfg: Config, data, name: str, cache_dir: pathlib.Path) -> tuple[float, dict, bool]:
    """Best peak LR of `name` by final validation loss after `sweep_steps` (seed sweep_seed),
    the sweep's losses, and whether the best is bracketed (a worse point on either side).

    Each grid point is cached in cache_dir (keyed by everything that changes it)."""
    base = cfg
    if cfg.lr_from:  # borrowed: that optimizer's own sweep, at the config's defaults
        base = dataclasses.replace(cfg, optimizer=name, sweep_lrs=(), adam_lr=Config.adam_lr)
    base = dataclasses.replace(base, lr_from="", lr_scale=1.0, seed=cfg.sweep_seed)
    grid = list(base.grid())
    cache_dir.mkdir(parents=True, exist_ok=True)
    results: dict[float, float] = {}

    def measure(lr: float) -> float:
        key = dataclasses.replace(base, lr=lr, steps=cfg.sweep_steps)
        digest = hashlib.sha256(json.dumps(dataclasses.asdict(key)).encode()).hexdigest()[:16]
        path = cache_dir / f"{name}-{digest}.json"
        if path.exists():
            return json.loads(path.read_text())["val_loss"]
        try:
            _, loss, _ = _train(base, data, name, lr, cfg.sweep_steps, cfg.sweep_seed)
        except NonFiniteLossError:  # this learning rate diverged: it loses the sweep
            loss = math.inf
        loss = loss if math.isfinite(loss) else math.inf
        if is_writer():
            path.write_text(json.dumps({"lr": lr, "val_loss": loss}))
        return loss

    for lr in grid:
        results[lr] = measure(lr)
    for _ in range(cfg.sweep_extensions):  # the best at an edge: one more point beyond it
        lrs = sorted(results)
        best = min(lrs, key=lambda x: results[x])
        if best == lrs[0]:
            new = lrs[0] / (lrs[1] / lrs[0])
        elif best == lrs[-1]:
            new = lrs[-1] * (lrs[-1] / lrs[-2])
        else:
            break
        results[new] = measure(new)
    best = min(results, key=lambda x: results[x])
    bracketed = min(results) < best < max(results)
    return best, {f"{lr:.4g}": loss for lr, loss in sorted(results.items())}, bracketed


def run(cfg: Config, workdir: pathlib.Path) -> dict[str, float]:
    """Trains one optimizer; returns '<optimizer>/<metric>' keys (val_ppl, memory, throughput)."""
    if cfg.mode == "memory":
        return memory_run(cfg)
    data = scale_data.load(cfg)
    name = cfg.optimizer
    sweep: dict = {}
    bracketed = None  # no sweep: a fixed LR, nothing to bracket
    lr = cfg.lr
    if lr == 0:
        source = cfg.lr_from or name
        # inside the run directory, so the run's code fingerprint covers its sweep too
        lr, sweep, bracketed = choose_lr(cfg, data, source, workdir / "lr_sweep")
        lr *= cfg.lr_scale
    history, final, rate = _train(cfg, data, name, lr, cfg.steps, cfg.seed, workdir)
    if not math.isfinite(final):
        raise FloatingPointError(f"{name}: final validation loss is {final} (lr={lr})")
    model_probe = build_model(dataclasses.replace(cfg, sharding="none"), data.vocab_size, 0)
    mem = abstract_memory(dataclasses.replace(cfg, lr=lr), data.vocab_size)
    adam = abstract_memory(dataclasses.replace(cfg, lr=lr), data.vocab_size, "adamw")
    tokens = cfg.steps * cfg.batch_size * cfg.seq_len
    curve = {"tokens_per_step": cfg.batch_size * cfg.seq_len, **history, "sweep": sweep,
             "sweep_steps": cfg.sweep_steps}  # fmt: skip
    if is_writer():
        (workdir / "curve.json").write_text(json.dumps(curve))
    out = {
        "val_loss": final,
        "val_ppl": math.exp(final),
        "lr": lr,
        "state_mb": mem.state_bytes / 1e6,
        "total_mb": mem.total_bytes / 1e6,
        "total_vs_adamw": mem.total_bytes / adam.total_bytes,
        "state_vs_adamw": mem.state_bytes / adam.state_bytes,
        "tokens_per_s": rate,
        "tokens": float(tokens),
        "params": float(count_params(model_probe)),
    }
    if bracketed is not None:
        out["lr_bracketed"] = float(bracketed)
    out.update({f"sweep_loss@{k}": v for k, v in sweep.items()})
    return {f"{name}/{k}": v for k, v in out.items()}
