"""Parameter routing for SCALE-style optimizers: group labels and the reduced (fan-in) axes.

Works on any pytree of parameters (plain dicts, `nnx.State`, optax's masked trees): a leaf's
name is its key path joined with "/", with NNX's trailing `.value` dropped, e.g.
`layers/0/self_attn/q_proj/kernel`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

# The official code's "main" group: module names containing one of these (q/k/v/o, gate/up/
# down, embed_tokens); Flax's LLaMA names them self_attn/..., mlp/..., embed_tokens.
MAIN_PATTERNS = ("attn", "mlp", "attention", "embed")

LabelFn = Callable[[Any], Any]
AxesFn = Callable[[str, Any], tuple[int, ...]]


def path_name(path: Sequence[Any]) -> str:
    """A key path -> 'a/b/0/c' (DictKey, GetAttrKey, SequenceKey; NNX's `.value` dropped)."""
    parts = []
    for k in path:
        if isinstance(k, jax.tree_util.DictKey):
            parts.append(str(k.key))
        elif isinstance(k, jax.tree_util.GetAttrKey):
            if k.name != "value":
                parts.append(k.name)
        elif isinstance(k, jax.tree_util.SequenceKey):
            parts.append(str(k.idx))
        else:
            parts.append(str(k))
    return "/".join(parts)


def scale_label(name: str, ndim: int, main_patterns: Sequence[str] = MAIN_PATTERNS) -> str:
    """'oned' for 1-D (and 0-D) leaves; 'main' for matrices whose name holds a main pattern;
    'last' for every other matrix (in LLaMA: only the untied lm_head)."""
    if ndim <= 1:
        return "oned"
    low = name.lower()
    return "main" if any(p in low for p in main_patterns) else "last"


def scale_labels(params: Any, main_patterns: Sequence[str] = MAIN_PATTERNS) -> Any:
    """The label tree optax.partition expects: 'main' / 'last' / 'oned' per leaf."""
    return jax.tree_util.tree_map_with_path(
        lambda p, x: scale_label(path_name(p), x.ndim, main_patterns), params
    )


def fan_in_axes(name: str, x: Any) -> tuple[int, ...]:
    """The axes of a Flax kernel that hold its inputs (reduced to get one scale per output unit).

    Dense kernel [in, out], Embed table [vocab, d] and the lm_head kernel [d, vocab] all reduce
    axis 0. DenseGeneral: a q/k/v kernel [d, H, hd] reduces axis 0; an output projection
    [H, hd, d] (name holding 'o_proj' or 'out') reduces every axis but the last."""
    if x.ndim < 2:
        raise ValueError(f"{name}: column normalization needs a matrix, got shape {x.shape}")
    low = name.lower()
    if x.ndim > 2 and ("o_proj" in low or "out" in low):
        return tuple(range(x.ndim - 1))
    return (0,)


def fan_out_axes(name: str, x: Any) -> tuple[int, ...]:
    """Ablation: the complement of `fan_in_axes` (one scale per input unit instead)."""
    keep = set(fan_in_axes(name, x))
    return tuple(a for a in range(x.ndim) if a not in keep)
