"""The optax optimizer PASO wraps in a run: Adam (the paper's default), plain SGD, or SGD with
heavy-ball momentum (the official `cv_nccl.py` / torch `SGD(momentum)`).

torch's SGD with momentum (dampening 0, no Nesterov) keeps buf ← μ·buf + g and steps
θ ← θ − lr·buf; optax.sgd(lr, momentum=μ) is `trace(μ)` then `scale(−lr)`, the same recurrence.
The learning rate comes from the problem's own config (`<problem>.lr`), so an SGD row sets it.
"""

from __future__ import annotations

from typing import Literal

import optax

OptimizerName = Literal["adam", "sgd", "momentum"]
OPTIMIZERS = ("adam", "sgd", "momentum")


def make_optimizer(name: str, lr: float, momentum: float = 0.9) -> optax.GradientTransformation:
    """optax.adam(lr), optax.sgd(lr) or optax.sgd(lr, momentum), all with a constant lr."""
    if name == "adam":
        return optax.adam(lr)
    if name == "sgd":
        return optax.sgd(lr)
    if name == "momentum":
        return optax.sgd(lr, momentum=momentum)
    raise ValueError(f"optimizer={name!r}: choose one of {OPTIMIZERS}")
