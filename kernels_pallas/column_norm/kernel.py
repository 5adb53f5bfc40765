"""Pallas column-normalized update on a 2-D view [fan_in, fan_out] (see reference.py for the math).

The caller's array is viewed as X2 [F, N]: reduce (fan-in) axes first, the rest flattened into
columns; each column gets its own scale. Tiles are [rows, cols] blocks of X2.

- One pass (F fits one row block): each program loads its [rows, cols] tile of G (and M, W) once,
  reduces over rows, and writes W (and M) once.
- Two passes (F spans several row blocks): pass 1 on a (row block, column block) grid writes the new
  M and one partial sum of squares per tile; the partials are summed in jnp (n_row_blocks x N
  floats); pass 2 reads X (G, or the new M) and W once more and writes W. Both grids are fully
  parallel: no program accumulates across grid steps, so the lowering needs no sequential grid
  axis or backend-specific scratch memory (it stays portable across the GPU and TPU backends).

Edges (shapes that are not block multiples): the TPU backend and interpret mode pad an overhanging
block with unspecified values (NaN in interpret mode) and drop its out-of-range writes, so rows
past F are masked out of every sum with `where`. The Triton (GPU) backend does neither: a plain
`ref[...]` there is an unmasked load/store past the array. With `masked_edges=True` every load and
store is masked by the in-range rows and columns (the GPU path; interpret mode runs it too, so CPU
tests cover it).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu


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


class _Edges:
    """In-range masks of one [rows, cols] tile at tile index (i, j); loads/stores through them.

    masked=False: plain ref[...] (the backend pads and drops out-of-range parts itself).
    masked=True: masked loads (0 outside) and masked stores (nothing written outside).
    """

    def __init__(self, shape, i, j, n_rows: int, n_cols: int, masked: bool):
        rows = i * shape[0] + jax.lax.broadcasted_iota(jnp.int32, shape, 0)
        cols = j * shape[1] + jax.lax.broadcasted_iota(jnp.int32, (1, shape[1]), 1)
        self.row_ok = rows < n_rows  # [rows, cols]
        self.col_ok = cols < n_cols  # [1, cols]
        self.masked = masked

    def load(self, ref, per_column: bool = False):
        if not self.masked:
            return ref[...]
        mask = self.col_ok if per_column else self.row_ok & self.col_ok
        return plgpu.load(ref, mask=mask, other=0)

    def store(self, ref, value, per_column: bool = False):
        if not self.masked:
            ref[...] = value
            return
        mask = self.col_ok if per_column else self.row_ok & self.col_ok
        plgpu.store(ref, value.astype(ref.dtype), mask=mask)

    def sumsq(self, x):
        """Sum over the tile's rows of x^2, [1, cols]; rows past the array count 0."""
        xs = jnp.where(self.row_ok, x, 0.0)
        return jnp.sum(xs * xs, axis=0, keepdims=True)


def _load_x(io: _Edges, g_ref, m_ref, beta: float, m_dtype):
    """X in float32 for this tile, and the new momentum in m's dtype (None without momentum)."""
    x = io.load(g_ref).astype(jnp.float32)
    if m_ref is None:
        return x, None
    m_new = (beta * io.load(m_ref).astype(jnp.float32) + (1.0 - beta) * x).astype(m_dtype)
    return m_new.astype(jnp.float32), m_new


def _write_out(io: _Edges, out_ref, w_ref, step):
    if w_ref is None:
        io.store(out_ref, (-step).astype(out_ref.dtype))
    else:
        io.store(out_ref, (io.load(w_ref).astype(jnp.float32) - step).astype(out_ref.dtype))


def _one_pass_kernel(*refs, has_m, has_w, shape, beta, eps, m_dtype, masked):
    it = iter(refs)
    lr_ref, g_ref = next(it), next(it)
    m_ref = next(it) if has_m else None
    w_ref = next(it) if has_w else None
    out_ref = next(it)
    m_out_ref = next(it) if has_m else None

    io = _Edges(g_ref.shape, 0, pl.program_id(0), *shape, masked)
    x, m_new = _load_x(io, g_ref, m_ref, beta, m_dtype)
    rms = jnp.sqrt(io.sumsq(x) / shape[0])
    step = x * (lr_ref[...].astype(jnp.float32) / jnp.maximum(rms, eps))
    _write_out(io, out_ref, w_ref, step)
    if has_m:
        io.store(m_out_ref, m_new)


def _sumsq_kernel(*refs, has_m, shape, beta, m_dtype, masked):
    it = iter(refs)
    g_ref = next(it)
    m_ref = next(it) if has_m else None
    part_ref = next(it)
    m_out_ref = next(it) if has_m else None

    io = _Edges(g_ref.shape, pl.program_id(0), pl.program_id(1), *shape, masked)
    x, m_new = _load_x(io, g_ref, m_ref, beta, m_dtype)
    io.store(part_ref, io.sumsq(x), per_column=True)
    if has_m:
        io.store(m_out_ref, m_new)


def _apply_kernel(*refs, has_w, shape, masked):
    it = iter(refs)
    scale_ref, x_ref = next(it), next(it)
    w_ref = next(it) if has_w else None
    out_ref = next(it)

    io = _Edges(x_ref.shape, pl.program_id(0), pl.program_id(1), *shape, masked)
    step = io.load(x_ref).astype(jnp.float32) * io.load(scale_ref, per_column=True)
    _write_out(io, out_ref, w_ref, step)


@functools.partial(
    jax.jit,
    static_argnames=(
        "beta",
        "eps",
        "block_sizes",
        "interpret",
        "masked_edges",
        "compiler_params",
        "debug",
    ),
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
    masked_edges: bool = True,
    compiler_params=None,
    debug: bool = False,
) -> tuple[jax.Array, jax.Array | None]:
    """The kernel on 2-D arrays g, m, w: [F, N] (reduce over axis 0). lr: float32 scalar.

    masked_edges: mask every load/store at the array edge (required by the Triton backend; the
    TPU backend pads edge blocks itself and takes False). debug: Pallas prints each kernel's
    jaxpr and the lowered module (the Triton IR on GPU).
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
    call = functools.partial(
        pl.pallas_call, interpret=interpret, compiler_params=compiler_params, debug=debug
    )

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
            _one_pass_kernel, has_m=has_m, has_w=has_w, shape=(f, n), beta=beta, eps=eps,
            m_dtype=m_dtype, masked=masked_edges,
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
    kernel = functools.partial(
        _sumsq_kernel, has_m=has_m, shape=(f, n), beta=beta, m_dtype=m_dtype, masked=masked_edges
    )
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
        functools.partial(_apply_kernel, has_w=has_w, shape=(f, n), masked=masked_edges),
        out_shape=[out_sd], grid=(n_rb, n_cb), in_specs=in_specs, out_specs=[tile],
        input_output_aliases=aliases, name="column_norm_apply",
    )(*operands)  # fmt: skip
    return out, m_new
