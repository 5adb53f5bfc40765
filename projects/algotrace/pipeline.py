"""One run: train the decoder on the task mixture (unless only SmolLM2 is analysed), then run
each analysis of `cfg.analyses`, writing its JSON file into the run directory and returning
flat metrics."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

import jax
import numpy as np
from flax import nnx

from projects.algotrace import tasks
from shared.models.llama import SIZES, Llama, LlamaConfig
from shared.train.lm import train_lm


def build_model(cfg, seed: int) -> Llama:
    m = cfg.model
    if m.size:
        layout = dataclasses.replace(
            SIZES[m.size], vocab_size=len(tasks.VOCAB), max_seq_len=m.max_seq_len
        )
    else:
        layout = LlamaConfig(
            len(tasks.VOCAB), m.dim, m.num_layers, m.num_heads, m.num_heads, m.ffn_dim,
            max_seq_len=m.max_seq_len,
        )  # fmt: skip
    return Llama(layout, rngs=nnx.Rngs(jax.random.key(seed)))


def train_decoder(cfg, workdir: pathlib.Path) -> tuple[Llama, dict[str, float]]:
    """The decoder trained for cfg.train.steps on a fresh mixture of cfg.train_sequences."""
    t0 = time.time()
    stream = tasks.mixture_stream(cfg.train_sequences, seed=cfg.seed)
    train = tasks.windows(stream, cfg.model.seq_len)
    held = tasks.windows(tasks.mixture_stream(200, seed=10_000 + cfg.seed), cfg.model.seq_len)
    model = build_model(cfg, cfg.seed)
    tcfg = dataclasses.replace(cfg.train, seed=cfg.seed)
    hist = train_lm(model, train, held, tcfg, workdir=workdir, checkpoints=False, phase="mixture")
    metrics = {"train/val_loss": float(hist["val_loss"][-1]), "train/seconds": time.time() - t0}
    return model, metrics


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    metrics: dict[str, float] = {}
    model = None
    if any(a in ("fv", "primitives") for a in cfg.analyses):
        model, train_metrics = train_decoder(cfg, workdir)
        metrics.update(train_metrics)
    for analysis in cfg.analyses:
        t0 = time.time()
        if analysis == "fv":
            from projects.algotrace.toy_fv import run_toy_fv

            out = run_toy_fv(model, cfg)
        elif analysis == "primitives":
            from projects.algotrace.primitives import run_primitives

            out = run_primitives(model, cfg, workdir)
        else:
            from projects.algotrace.smollm2_fv import run_smollm2_fv

            out = run_smollm2_fv(cfg)
        out["seconds"] = time.time() - t0
        (workdir / f"{analysis}.json").write_text(json.dumps(out, indent=1))
        metrics.update(
            {
                f"{analysis}/{k}": float(v)
                for k, v in out.get("metrics", {}).items()
                if np.isscalar(v)
            }
        )
        metrics[f"{analysis}/seconds"] = out["seconds"]
    return metrics
