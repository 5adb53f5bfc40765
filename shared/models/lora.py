"""LoRA (Hu et al., 2022) on a parameter pytree, for merging low-rank task vectors.

Layout follows the flax `nnx.Linear` kernel, which is [in, out] (y = x @ W): a LoRA on a kernel
W0 [in, out] is the pair A [in, r], B [r, out] with

    W = W0 + scale · A @ B        (the paper's "B A" in the [out, in] convention, transposed)

A starts small and random (N(0, 1/in)), B at zero, so the LoRA starts as the identity edit and
its gradient w.r.t. B is nonzero from the first step. A conv kernel [kh, kw, cin, cout] (the
`nnx.Conv` layout) is treated as the matrix [kh·kw·cin, cout] and its delta reshaped back.

The LoRA tree is a dict from a leaf's path name ("block/conv/kernel") to {"a": A, "b": B}: a plain
pytree, so it can be trained with optax. `lora_delta` turns it into a dense delta tree of the
params' structure (zeros on the leaves without a LoRA): that dense tree is the LoRA's task vector
and merges with shared/models/merging.py like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PyTree = Any
Lora = dict[str, dict[str, jax.Array]]  # path name -> {"a": [in, r], "b": [r, out]}


def path_name(path: tuple) -> str:
    """ "conv/kernel" from a jax key path of dict keys, attributes or sequence indices."""
    parts = []
    for k in path:
        for attr in ("key", "name", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return "/".join(parts)


def is_kernel(name: str, leaf: Any) -> bool:
    """The default targets: every leaf named "kernel" with at least 2 dimensions."""
    return name.rsplit("/", 1)[-1] == "kernel" and np.ndim(leaf) >= 2


def matrix_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """(in, out) of a kernel: the last axis is out, every other axis is folded into in."""
    return int(np.prod(shape[:-1])), int(shape[-1])


def target_names(
    params: PyTree, targets: Callable[[str, Any], bool] = is_kernel
) -> dict[str, tuple[int, ...]]:
    """{path name: shape} of the leaves `targets` selects."""
    found = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
        name = path_name(path)
        if targets(name, leaf):
            found[name] = tuple(np.shape(leaf))
    return found


def init_lora(
    params: PyTree,
    rank: int,
    key: jax.Array,
    targets: Callable[[str, Any], bool] = is_kernel,
) -> Lora:
    """A [in, rank] ~ N(0, 1/in) and B [rank, out] = 0 for each targeted kernel."""
    names = target_names(params, targets)
    if not names:
        raise ValueError("init_lora: `targets` selected no leaf of params")
    lora = {}
    for i, (name, shape) in enumerate(sorted(names.items())):
        fan_in, fan_out = matrix_shape(shape)
        if rank > min(fan_in, fan_out):
            raise ValueError(f"rank={rank} exceeds min(in, out) = {min(fan_in, fan_out)} of {name}")
        a = jax.random.normal(jax.random.fold_in(key, i), (fan_in, rank)) / np.sqrt(fan_in)
        lora[name] = {"a": a, "b": jnp.zeros((rank, fan_out), a.dtype)}
    return lora


def factor_delta(factors: dict[str, jax.Array], shape: tuple[int, ...]) -> jax.Array:
    """A @ B reshaped to the kernel's shape: [in, r] @ [r, out] -> shape."""
    return jnp.einsum("ir,ro->io", factors["a"], factors["b"]).reshape(shape)


def lora_delta(params: PyTree, lora: Lora) -> PyTree:
    """The dense delta tree: A @ B on the LoRA's leaves, zeros elsewhere (params' structure)."""
    unknown = set(lora) - set(target_names(params, lambda n, leaf: True))
    if unknown:
        raise KeyError(f"LoRA leaves {sorted(unknown)} are not in params")

    def delta(path, leaf):
        name = path_name(path)
        if name in lora:
            return factor_delta(lora[name], np.shape(leaf)).astype(jnp.asarray(leaf).dtype)
        return jnp.zeros_like(leaf)

    return jax.tree_util.tree_map_with_path(delta, params)


def apply_lora(params: PyTree, lora: Lora, scale: float = 1.0) -> PyTree:
    """W0 + scale · A @ B on the LoRA's leaves; other leaves unchanged."""
    delta = lora_delta(params, lora)
    return jax.tree.map(lambda w, d: jnp.asarray(w) + scale * d, params, delta)
