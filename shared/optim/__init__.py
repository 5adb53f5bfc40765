"""Optimizers for LLM pretraining studies: SCALE, its ablations and baselines, memory accounting."""

from shared.optim.baselines import NAMES, OptimizerOptions, make_optimizer
from shared.optim.labels import fan_in_axes, fan_out_axes, path_name, scale_labels
from shared.optim.memory import Memory, optimizer_memory, tree_bytes
from shared.optim.scale import scale, scale_by_adam_eps_first, scale_by_column_norm, scale_schedule

__all__ = [
    "NAMES",
    "Memory",
    "OptimizerOptions",
    "fan_in_axes",
    "fan_out_axes",
    "make_optimizer",
    "optimizer_memory",
    "path_name",
    "scale",
    "scale_by_adam_eps_first",
    "scale_by_column_norm",
    "scale_labels",
    "scale_schedule",
    "tree_bytes",
]
