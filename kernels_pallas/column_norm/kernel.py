"""Pallas column-normalized update on a 2-D view [fan_in, fan_out] (see reference.py for the math).

The caller's array is viewed as X2 [F, N]: reduce (fan-in) axes first, the rest flattened into
columns; each column gets its own scale. The grid tiles the columns.

- One pass (F fits one row block): each program loads its [rows, cols] tile of G (and M, W) once,
  reduces over rows, and writes W (and M) once.
- Two passes (F spans several row blocks): pass 1 on a (row block, column block) grid writes the new
  M and one partial sum of squares per tile; the partials are summed in jnp (n_row_blocks x N
  floats); pass 2 reads X (G, or the new M) and W once more and writes W. Both grids are fully
  parallel: no program accumulates across grid steps, so the lowering needs no sequential grid
  axis or backend-specific scratch memory (it stays portable across the GPU and TPU backends).

Blocks that overhang the array edge read unspecified values (NaN in interpret mode): rows past F
are masked out of every sum; columns past N are independent and their writes are dropped.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclasses.dataclass(frozen=True)
class BlockSizes:
    """Tile sizes. Powers of two (the Triton lowering needs power-of-two tiles).

    block_rows: rows (fan-in entries) per tile; a fan-in above it takes the two-pass path.
    block_cols: output columns per tile (each program owns these columns).
    The defaults are not tuned on hardware (no accelerator measurement backs them).
    """

    block_rows: int = 512
    block_cols: int = 32

    def __post_init__(self):
        for name in ("block_rows", "block_cols"):
            v = getattr(self, name)
            if not isinstance(v, int) or not _is_pow2(v):
                raise ValueError(f"BlockSizes.{name}={v!r} must be a power of two (e.g. 32, 512).")


def _next_pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _tile(f: int, n: int, bs: BlockSizes) -> tuple[int, int]:
    """(tile rows, tile cols): the whole column when it fits one block, else block_rows."""
    return min(bs.block_rows, _next_pow2(f)), min(bs.block_cols, _next_pow2(n))


def _load_x(g_ref, m_ref, beta: float, m_dtype):
    """X in float32 for this tile, and the new momentum in m's dtype (None without momentum)."""
    x = g_ref[...].astype(jnp.float32)
    if m_ref is None:
        return x, None
    m_new = (beta * m_ref[...].astype(jnp.float32) + (1.0 - beta) * x).astype(m_dtype)
    return m_new.astype(jnp.float32), m_new


def _masked_sumsq(x, row_block: int | jax.Array, n_rows: int):
    """Sum over this tile's rows of x^2, [1, cols]; rows past n_rows (edge garbage) count 0."""
    rows = row_block * x.shape[0] + jax.lax.broadcasted_iota(jnp.int32, x.shape, 0)
    xs = jnp.where(rows < n_rows, x, 0.0)
    return jnp.sum(xs * xs, axis=0, keepdims=True)


def _one_pass_kernel(*refs, has_m, has_w, n_rows, beta, eps, m_dtype):
    it = iter(refs)
    lr_ref, g_ref = next(it), next(it)
    m_ref = next(it) if has_m else None
    w_ref = next(it) if has_w else None
    out_ref = next(it)
    m_out_ref = next(it) if has_m else None

    x, m_new = _load_x(g_ref, m_ref, beta, m_dtype)
    rms = jnp.sqrt(_masked_sumsq(x, 0, n_rows) / n_rows)
    step = x * (lr_ref[...].astype(jnp.float32) / jnp.maximum(rms, eps))
    if has_w:
        out_ref[...] = (w_ref[...].astype(jnp.float32) - step).astype(out_ref.dtype)
    else:
        out_ref[...] = (-step).astype(out_ref.dtype)
    if has_m:
        m_out_ref[...] = m_new


def _sumsq_kernel(*refs, has_m, n_rows, beta, m_dtype):
    it = iter(refs)
    g_ref = next(it)
    m_ref = next(it) if has_m else None
    part_ref = next(it)
    m_out_ref = next(it) if has_m else None

    x, m_new = _load_x(g_ref, m_ref, beta, m_dtype)
    part_ref[...] = _masked_sumsq(x, pl.program_id(0), n_rows)
    if has_m:
        m_out_ref[...] = m_new


def _apply_kernel(*refs, has_w):
    it = iter(refs)
    scale_ref, x_ref = next(it), next(it)
    w_ref = next(it) if has_w else None
    out_ref = next(it)

    step = x_ref[...].astype(jnp.float32) * scale_ref[...]
    if has_w:
        out_ref[...] = (w_ref[...].astype(jnp.float32) - step).astype(out_ref.dtype)
    else:
        out_ref[...] = (-step).astype(out_ref.dtype)


@functools.partial(
    jax.jit, static_argnames=("beta", "eps", "block_sizes", "interpret", "compiler_params")
)
def column_norm_update_2d(
    g: jax.Array,
    m: jax.Array | None,
    w: jax.Array | None,
    lr: jax.Array,
    *,
    beta: float,
    eps: float,
    block_sizes: BlockSizes,
    interpret: bool,
    compiler_params=None,
) -> tuple[jax.Array, jax.Array | None]:
    """The kernel on 2-D arrays g, m, w: [F, N] (reduce over axis 0). lr: float32 scalar.

    Returns (W - lr*U or -lr*U, new M or None). W and M are aliased to their outputs, so a caller
    that donates them updates them in place.
    """
    f, n = g.shape
    has_m, has_w = m is not None, w is not None
    tr, tc = _tile(f, n, block_sizes)
    n_rb, n_cb = pl.cdiv(f, tr), pl.cdiv(n, tc)
    out_dtype = w.dtype if has_w else g.dtype
    m_dtype = m.dtype if has_m else None
    out_sd = jax.ShapeDtypeStruct((f, n), out_dtype)
    m_sd = jax.ShapeDtypeStruct((f, n), m_dtype) if has_m else None
    call = functools.partial(pl.pallas_call, interpret=interpret, compiler_params=compiler_params)

    if n_rb == 1:
        tile = pl.BlockSpec((tr, tc), lambda j: (0, j))
        operands = [lr.reshape(1, 1).astype(jnp.float32), g]
        in_specs = [pl.BlockSpec((1, 1), lambda j: (0, 0)), tile]
        out_shape, out_specs, aliases = [out_sd], [tile], {}
        if has_m:
            operands.append(m)
            in_specs.append(tile)
        if has_w:
            aliases[len(operands)] = 0
            operands.append(w)
            in_specs.append(tile)
        if has_m:
            aliases[2] = 1
            out_shape.append(m_sd)
            out_specs.append(tile)
        kernel = functools.partial(
            _one_pass_kernel, has_m=has_m, has_w=has_w, n_rows=f, beta=beta, eps=eps,
            m_dtype=m_dtype,
        )  # fmt: skip
        outs = call(
            kernel, out_shape=out_shape, grid=(n_cb,), in_specs=in_specs,
            out_specs=out_specs, input_output_aliases=aliases, name="column_norm_one_pass",
        )(*operands)  # fmt: skip
        return outs[0], (outs[1] if has_m else None)

    # Two passes. Grid (row block i, column block j), both axes parallel.
    tile = pl.BlockSpec((tr, tc), lambda i, j: (i, j))
    part_spec = pl.BlockSpec((None, 1, tc), lambda i, j: (i, 0, j))
    part_sd = jax.ShapeDtypeStruct((n_rb, 1, n), jnp.float32)
    kernel = functools.partial(_sumsq_kernel, has_m=has_m, n_rows=f, beta=beta, m_dtype=m_dtype)
    if has_m:
        part, m_new = call(
            kernel, out_shape=[part_sd, m_sd], grid=(n_rb, n_cb), in_specs=[tile, tile],
            out_specs=[part_spec, tile], input_output_aliases={1: 1}, name="column_norm_sumsq",
        )(g, m)  # fmt: skip
        x = m_new
    else:
        (part,) = call(
            kernel, out_shape=[part_sd], grid=(n_rb, n_cb), in_specs=[tile],
            out_specs=[part_spec], name="column_norm_sumsq",
        )(g)  # fmt: skip
        m_new, x = None, g
    rms = jnp.sqrt(jnp.sum(part, axis=0) / f)  # [1, N]
    scale = lr.astype(jnp.float32) / jnp.maximum(rms, eps)

    col_spec = pl.BlockSpec((1, tc), lambda i, j: (0, j))
    operands, in_specs, aliases = [scale, x], [col_spec, tile], {}
    if has_w:
        aliases[2] = 0
        operands.append(w)
        in_specs.append(tile)
    (out,) = call(
        functools.partial(_apply_kernel, has_w=has_w), out_shape=[out_sd], grid=(n_rb, n_cb),
        in_specs=in_specs, out_specs=[tile], input_output_aliases=aliases,
        name="column_norm_apply",
    )(*operands)  # fmt: skip
    return out, m_new
