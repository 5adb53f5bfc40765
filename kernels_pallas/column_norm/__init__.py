"""Column-normalized update (SCALE): W <- W - lr * X / max(rms of X over the fan-in axes, eps).

`column_norm_update` dispatches between the Pallas kernel (kernel.py) and the jnp reference
(reference.py, the spec). See reference.py for the exact math.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from kernels_pallas.column_norm.kernel import BlockSizes, column_norm_update_2d
from kernels_pallas.column_norm.reference import (
    column_norm_update_reference,
    normalize_axes,
)

__all__ = ["BlockSizes", "column_norm_update", "column_norm_update_reference"]

_IMPLS = ("auto", "pallas", "reference")


def _to_2d(x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """[*shape] -> [prod(reduce dims), prod(other dims)]; free when the reduce axes lead."""
    rest = tuple(a for a in range(x.ndim) if a not in axes)
    if axes != tuple(range(len(axes))):
        x = jnp.transpose(x, axes + rest)  # a copy: only when fan-in axes are not leading
    f = math.prod(x.shape[: len(axes)])
    return x.reshape(f, -1)


def _from_2d(x2: jax.Array, shape: tuple[int, ...], axes: tuple[int, ...]) -> jax.Array:
    rest = tuple(a for a in range(len(shape)) if a not in axes)
    perm = axes + rest
    x = x2.reshape(tuple(shape[a] for a in perm))
    if axes != tuple(range(len(axes))):
        x = jnp.transpose(x, [perm.index(a) for a in range(len(shape))])
    return x


def _default_block_sizes(backend: str) -> BlockSizes:
    """TPU tiles keep 128 lanes in the last dim (Mosaic's layout); elsewhere 32 columns."""
    return BlockSizes(block_rows=512, block_cols=128 if backend == "tpu" else 32)


def _compiler_params(interpret: bool):
    """Triton launch parameters on GPU; None elsewhere. Untuned (no GPU measurement yet)."""
    if interpret or jax.default_backend() != "gpu":
        return None
    from jax.experimental.pallas import triton as plgpu

    return plgpu.CompilerParams(num_warps=8)


def column_norm_update(
    g: jax.Array,
    m: jax.Array | None = None,
    w: jax.Array | None = None,
    *,
    lr: float | jax.Array,
    beta: float = 0.9,
    eps: float = 1e-8,
    reduce_axes: tuple[int, ...] = (0,),
    impl: str = "auto",
    block_sizes: BlockSizes | None = None,
    interpret: bool | None = None,
) -> tuple[jax.Array, jax.Array | None]:
    """Column-normalized step for one weight.

    g: gradient, shape of the weight. m: momentum buffer (same shape) or None (no momentum; when
    given, m <- beta*m + (1-beta)*g, no bias correction, and X = new m, else X = g).
    w: the weight; if given returns the new weight W - lr*U, else the update -lr*U.
    U = X / max(sqrt(mean(X^2 over reduce_axes, keepdims)), eps). reduce_axes are the input
    (fan-in) axes: (0,) for Dense [in, out], Embed [vocab, d], DenseGeneral [d, H, hd];
    (0, 1) for an output projection [H, hd, d].
    impl: "auto" (reference on CPU, Pallas on GPU/TPU) | "pallas" | "reference".
    interpret: run Pallas in interpret mode; None means True on CPU.
    Returns (new weight or update, new momentum or None), in the input dtypes (math in float32).
    """
    if impl not in _IMPLS:
        raise ValueError(f"impl={impl!r}; choose one of {_IMPLS}.")
    for name, a in (("m", m), ("w", w)):
        if a is not None and a.shape != g.shape:
            raise ValueError(f"{name}.shape={a.shape} differs from g.shape={g.shape}.")
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta={beta} must be in [0, 1).")
    if not eps > 0.0:
        raise ValueError(f"eps={eps} must be > 0 (it floors the RMS).")
    axes = normalize_axes(reduce_axes, g.ndim)
    backend = jax.default_backend()
    if impl == "auto":
        impl = "reference" if backend == "cpu" else "pallas"
    if impl == "reference":
        return column_norm_update_reference(
            g, m, w, lr=lr, beta=beta, eps=eps, reduce_axes=reduce_axes
        )

    interpret = backend == "cpu" if interpret is None else bool(interpret)
    m2 = None if m is None else _to_2d(m, axes)
    w2 = None if w is None else _to_2d(w, axes)
    out2, m_new2 = column_norm_update_2d(
        _to_2d(g, axes),
        m2,
        w2,
        jnp.asarray(lr, jnp.float32),
        beta=float(beta),
        eps=float(eps),
        block_sizes=block_sizes or _default_block_sizes(backend),
        interpret=interpret,
        masked_edges=backend != "tpu" or interpret,
        compiler_params=_compiler_params(interpret),
    )
    out = _from_2d(out2, g.shape, axes)
    m_new = None if m_new2 is None else _from_2d(m_new2, g.shape, axes)
    return out, m_new
