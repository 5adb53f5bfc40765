"""Every optimizer of the SCALE comparison behind one constructor, sharing SCALE's schedule.

`make_optimizer(name, lr, total_steps)` -> optax.GradientTransformation. All use linear warm-up
over 10% of the steps then cosine to 0.1x, no weight decay and no clipping (the official scripts'
settings), so rows differ only in the update rule.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import optax
from optax.contrib import MuonDimensionNumbers, muon

from shared.optim.apollo import scale_by_apollo_mini
from shared.optim.galore import scale_by_galore
from shared.optim.labels import fan_out_axes, path_name, scale_label, scale_labels
from shared.optim.scale import scale, scale_schedule


@dataclasses.dataclass(frozen=True)
class OptimizerOptions:
    adam_lr: float = 0.02  # SCALE's 1-D AdamW LR (official default; 1B/7B scripts pass 1e-3)
    galore_rank: int = 128  # GaLore rank (official 60M script: 128; 130M-350M: 256; 1B: 512)
    galore_alpha: float = 0.25  # GaLore scale (official scripts)
    projection_gap: int = 200  # steps between GaLore / APOLLO projection refreshes
    muon_rms: float = 0.2  # Muon update RMS matched to AdamW's (Moonlight), one LR for both parts
    seed: int = 0  # APOLLO's random projections


NAMES = (
    "adamw",
    "sgd",
    "sgd_momentum",
    "sgd_adam1d",
    "colnorm_sgd",
    "scale",
    "momentum_all",
    "scale_per_input",
    "scale_l2",
    "muon",
    "galore",
    "apollo_mini",
)


def lowrank_labels(params: Any) -> Any:
    """'lowrank' for SCALE's 'main' matrices (attention/MLP; embeddings too in SCALE, but GaLore
    and APOLLO keep embeddings and the head on AdamW as their official code), 'adamw' else."""

    def label(path, x):
        name = path_name(path)
        if scale_label(name, x.ndim) == "main" and "embed" not in name.lower():
            return "lowrank"
        return "adamw"

    return jax.tree_util.tree_map_with_path(label, params)


def _muon_dims(params: Any) -> Any:
    """Muon on attention/MLP matrices; embeddings, lm_head and 1-D gains on Adam (None)."""
    labels = lowrank_labels(params)
    dims = MuonDimensionNumbers(0, 1)
    return jax.tree.map(lambda lab: dims if lab == "lowrank" else None, labels)


def make_optimizer(
    name: str, lr: float, total_steps: int, opts: OptimizerOptions = OptimizerOptions()
) -> optax.GradientTransformation:
    """The named optimizer at peak LR `lr` with warm-up + cosine over `total_steps`."""
    if name not in NAMES:
        raise ValueError(f"unknown optimizer {name!r}; choose one of {NAMES}")
    sched = scale_schedule(lr, total_steps)
    adamw = optax.adamw(sched, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.0)
    if name == "adamw":
        return adamw
    if name == "sgd":
        return optax.sgd(sched)
    if name == "sgd_momentum":
        return optax.sgd(sched, momentum=0.9)
    kw = {"adam_lr": opts.adam_lr}
    if name == "sgd_adam1d":  # ablation rung: SCALE's routing without normalization or momentum
        return scale(lr, total_steps, norm="none", head_momentum=False, **kw)
    if name == "colnorm_sgd":
        return scale(lr, total_steps, head_momentum=False, **kw)
    if name == "scale":
        return scale(lr, total_steps, **kw)
    if name == "momentum_all":
        return scale(lr, total_steps, main_momentum=True, **kw)
    if name == "scale_per_input":
        return scale(lr, total_steps, reduce_axes=fan_out_axes, **kw)
    if name == "scale_l2":
        return scale(lr, total_steps, norm="l2", **kw)
    if name == "muon":
        return muon(sched, muon_weight_dimension_numbers=_muon_dims, consistent_rms=opts.muon_rms)
    if name == "galore":
        inner = scale_by_galore(opts.galore_rank, opts.projection_gap, opts.galore_alpha)
    else:
        inner = scale_by_apollo_mini(update_gap=opts.projection_gap, seed=opts.seed)
    lowrank = optax.chain(inner, optax.scale_by_learning_rate(sched))
    return optax.partition({"lowrank": lowrank, "adamw": adamw}, lowrank_labels)


__all__ = ["NAMES", "OptimizerOptions", "lowrank_labels", "make_optimizer", "scale_labels"]
