"""Training: the loop, checkpointing, optimizers."""

from shared.train.checkpoint import Checkpointer
from shared.train.loop import NonFiniteLossError, Preempted, train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine

__all__ = [
    "Checkpointer",
    "NonFiniteLossError",
    "Preempted",
    "adamw_no_decay_on_vectors",
    "train_loop",
    "warmup_cosine",
]
