"""Cross-task linearity (CTL, Zhou et al., 2024), Figure 1: for two models fine-tuned from θ_0,
per layer ℓ and mixing weight α,

    err_ℓ(α) = ‖f_ℓ(αθ_1 + (1−α)θ_2) − [α f_ℓ(θ_1) + (1−α) f_ℓ(θ_2)]‖ / ‖f_ℓ(αθ_1 + (1−α)θ_2)‖

with Frobenius norms over a probe batch (all of the layer's outputs for all probe inputs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PyTree = Any


def interpolate(theta1: PyTree, theta2: PyTree, alpha: float) -> PyTree:
    """α θ_1 + (1 − α) θ_2."""
    return jax.tree.map(lambda a, b: alpha * a + (1 - alpha) * b, theta1, theta2)


def ctl_errors(
    layer_features: Callable[[PyTree, jax.Array], dict[str, jax.Array]],
    theta1: PyTree,
    theta2: PyTree,
    x: jax.Array,
    alphas: Sequence[float],
) -> dict[str, list[float]]:
    """{layer: [err_ℓ(α) for α in alphas]}; layer_features(params, x) -> {name: [b, ...]}."""
    f1, f2 = layer_features(theta1, x), layer_features(theta2, x)
    out: dict[str, list[float]] = {name: [] for name in f1}
    for alpha in alphas:
        fm = layer_features(interpolate(theta1, theta2, alpha), x)
        for name in f1:
            lin = alpha * f1[name] + (1 - alpha) * f2[name]
            num = jnp.linalg.norm((fm[name] - lin).ravel())
            den = jnp.maximum(jnp.linalg.norm(fm[name].ravel()), 1e-12)
            out[name].append(float(num / den))
    return out


def pair_errors(layer_features, models: dict[str, PyTree], pairs, probes: dict[str, np.ndarray],
                alphas) -> dict[str, dict[str, list[float]]]:  # fmt: skip
    """{"a+b": {layer: errors}} for each pair (a, b) of named models, probed on the union of the
    two tasks' probe inputs."""
    fn = jax.jit(layer_features)
    return {f"{a}+{b}": ctl_errors(fn, models[a], models[b],
                                   jnp.concatenate([probes[a], probes[b]]), alphas)
            for a, b in pairs}  # fmt: skip
