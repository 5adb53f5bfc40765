"""Training: the loop (which owns its checkpoints), optimizers and schedules."""

from shared.train.loop import (
    DivergedError,
    NonFiniteLossError,
    Preempted,
    latest_checkpoint_step,
    train_loop,
)
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine

__all__ = [
    "DivergedError",
    "NonFiniteLossError",
    "Preempted",
    "adamw_no_decay_on_vectors",
    "latest_checkpoint_step",
    "train_loop",
    "warmup_cosine",
]
