"""Column-normalized update (SCALE): the Pallas kernel (interpret mode on CPU) against the jnp
reference, the reference against a NumPy transcription of the official torch update, invariants
(per-column RMS = lr, zero column, scale invariance) and a portable lowering for GPU and TPU."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

from kernels_pallas.column_norm import BlockSizes, column_norm_update
from kernels_pallas.column_norm.kernel import column_norm_update_2d

LR = 0.03
SMALL = BlockSizes(block_rows=16, block_cols=8)  # small tiles: many blocks, ragged edges


def _inputs(shape, dtype, seed=0):
    kg, km, kw = jax.random.split(jax.random.key(seed), 3)
    return tuple(jax.random.normal(k, shape, jnp.float32).astype(dtype) for k in (kg, km, kw))


@functools.partial(jax.jit, static_argnames=("impl", "axes", "bs", "every", "compiled"))
def _variants(g, m, w, lr, *, impl, axes, bs, every=False, compiled=False):
    """(no momentum, no weight) and (momentum, weight); every=True adds the two mixed ones.
    compiled=False runs Pallas in interpret mode; True compiles it for the accelerator."""
    f = functools.partial(
        column_norm_update, lr=lr, reduce_axes=axes, impl=impl, block_sizes=bs,
        interpret=not compiled,
    )  # fmt: skip
    return [f(g), f(g, m, w)] + ([f(g, m), f(g, None, w)] if every else [])


def _close_f32(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6 * np.abs(want).max())


def _close_bf16(got, want):
    """Equal to bf16 rounding: at most one bf16 ulp (2^-7 relative to the binade) apart."""
    got = np.asarray(got.astype(jnp.float32), np.float64)
    want = np.asarray(want.astype(jnp.float32), np.float64)
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(want), 1e-30))) - 7)
    assert np.all(np.abs(got - want) <= ulp), np.max(np.abs(got - want) / ulp)


CASES = [
    # (shape, reduce_axes, block sizes, all four momentum/weight variants)
    ((16, 8), (0,), SMALL, False),  # exact block multiples, one pass
    ((13, 21), (0,), SMALL, True),  # ragged rows and columns, one pass (tile 16 x 8)
    ((70, 19), (0,), SMALL, True),  # fan_in 70 > 16: two passes, ragged both ways
    ((9, 3, 4), (0,), SMALL, False),  # DenseGeneral q/k/v kernel (d, H, hd)
    (
        (3, 6, 11),
        (0, 1),
        SMALL,
        False,
    ),  # DenseGeneral output kernel (H, hd, d): fan_in 18, 2 passes
    ((100, 12), (0,), SMALL, False),  # embedding [vocab, d]: scale per feature over the vocab
    ((12, 40), (0,), BlockSizes(block_rows=512, block_cols=32), False),  # default-size tiles
]


@pytest.mark.parametrize("shape,axes,bs,every", CASES)
def test_kernel_equals_reference_float32(shape, axes, bs, every):
    g, m, w = _inputs(shape, jnp.float32)
    got = _variants(g, m, w, LR, impl="pallas", axes=axes, bs=bs, every=every)
    want = _variants(g, m, w, LR, impl="reference", axes=axes, bs=bs, every=every)
    for (o, mo), (ro, rmo) in zip(got, want, strict=True):
        assert o.dtype == jnp.float32 and o.shape == shape
        _close_f32(o, ro)
        assert (mo is None) == (rmo is None)
        if mo is not None:
            _close_f32(mo, rmo)


@pytest.mark.parametrize("shape,axes", [((13, 21), (0,)), ((3, 6, 11), (0, 1))])
def test_kernel_equals_reference_bfloat16(shape, axes):
    g, m, w = _inputs(shape, jnp.bfloat16, seed=1)
    got = _variants(g, m, w, LR, impl="pallas", axes=axes, bs=SMALL)
    want = _variants(g, m, w, LR, impl="reference", axes=axes, bs=SMALL)
    for (o, mo), (ro, rmo) in zip(got, want, strict=True):
        assert o.dtype == jnp.bfloat16
        _close_bf16(o, ro)
        if mo is not None:
            assert mo.dtype == jnp.bfloat16
            _close_bf16(mo, rmo)


@pytest.mark.parametrize("f", [13, 70])  # one pass, two passes
def test_unmasked_edges_path_equals_masked(f):
    """The TPU-style path (backend pads edge blocks; NaN padding in interpret mode) and the
    GPU-style masked loads/stores give the same result."""
    g, m, w = _inputs((f, 19), jnp.float32, seed=2)
    run = functools.partial(
        column_norm_update_2d, beta=0.9, eps=1e-8, block_sizes=SMALL, interpret=True
    )
    lr = jnp.float32(LR)
    a = run(g, m, w, lr, masked_edges=True)
    b = run(g, m, w, lr, masked_edges=False)
    for x, y in zip(a, b, strict=True):
        assert np.all(np.isfinite(np.asarray(x)))
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.mark.parametrize("impl", ["reference", "pallas"])
def test_column_rms_equals_lr_and_scale_invariance(impl):
    shape = (70, 19)
    g, _, _ = _inputs(shape, jnp.float32, seed=3)
    f = jax.jit(
        lambda g: column_norm_update(g, lr=LR, impl=impl, block_sizes=SMALL, interpret=True)[0]
    )
    u = np.asarray(f(g), np.float64)
    np.testing.assert_allclose(np.sqrt(np.mean(u**2, axis=0)), LR, rtol=1e-6)
    assert np.all(np.sign(u) == -np.sign(np.asarray(g)))  # a descent step
    _close_f32(f(37.5 * g), u)
    _close_f32(f(1e-3 * g), u)


@pytest.mark.parametrize("impl", ["reference", "pallas"])
def test_zero_column_gives_zero_update(impl):
    g, m, w = _inputs((70, 19), jnp.float32, seed=4)
    g = g.at[:, 5].set(0.0)
    m = m.at[:, 5].set(0.0)
    f = jax.jit(
        lambda g, m, w: column_norm_update(
            g, m, w, lr=LR, impl=impl, block_sizes=SMALL, interpret=True
        )
    )
    (u, _), (w_new, _) = f(g, None, None), f(g, m, w)
    assert np.all(np.isfinite(np.asarray(u))) and np.all(np.isfinite(np.asarray(w_new)))
    np.testing.assert_array_equal(np.asarray(u)[:, 5], 0.0)
    np.testing.assert_array_equal(np.asarray(w_new)[:, 5], np.asarray(w)[:, 5])


def _torch_step(p, g, m, lr, col_dim, beta=0.9, eps=1e-8):
    """NumPy transcription of the official update on a torch-layout tensor (wd = 0):
    m.lerp_(g, 1 - beta); s = max(sqrt(mean(m^2, col_dim, keepdim)), eps); p -= lr * m / s."""
    if m is not None:
        m = m + (1 - beta) * (g - m)
        g = m
    s = np.maximum(np.sqrt(np.mean(g * g, axis=col_dim, keepdims=True)), eps)
    return p - lr * g / s, m


@pytest.mark.parametrize("momentum", [False, True])
def test_reference_matches_torch_transcription(momentum):
    rng = np.random.default_rng(5)
    # Linear: torch weight [out, in], col_dim 1; Flax kernel [in, out] = its transpose.
    p, g, m = (rng.standard_normal((6, 10)) for _ in range(3))
    m = m if momentum else None
    want_p, want_m = _torch_step(p, g, m, LR, col_dim=1)
    got_w, got_m = column_norm_update(
        jnp.asarray(g.T, jnp.float32),
        None if m is None else jnp.asarray(m.T, jnp.float32),
        jnp.asarray(p.T, jnp.float32),
        lr=LR,
        impl="reference",
    )
    _close_f32(np.asarray(got_w).T, want_p)
    if momentum:
        _close_f32(np.asarray(got_m).T, want_m)
    # Embedding: torch [vocab, d] with col_dim 0; Flax Embed [vocab, d] reduces axis 0 too.
    p, g = rng.standard_normal((30, 4)), rng.standard_normal((30, 4))
    want_p, _ = _torch_step(p, g, None, LR, col_dim=0)
    got_w, _ = column_norm_update(
        jnp.asarray(g, jnp.float32), None, jnp.asarray(p, jnp.float32), lr=LR, impl="reference"
    )
    _close_f32(got_w, want_p)
    # The wrong axis gives a different step (the test above can tell the axes apart).
    wrong, _ = _torch_step(p, g, None, LR, col_dim=1)
    assert np.max(np.abs(wrong - want_p)) > 1e-3


def test_traced_lr_and_auto_dispatch():
    g, m, w = _inputs((13, 21), jnp.float32, seed=6)
    step = jax.jit(lambda lr: column_norm_update(g, m, w, lr=lr)[0])  # auto: reference on CPU
    _close_f32(step(jnp.float32(LR)), column_norm_update(g, m, w, lr=LR, impl="reference")[0])
    kern = jax.jit(lambda lr: column_norm_update(g, m, w, lr=lr, impl="pallas")[0])
    _close_f32(kern(jnp.float32(LR)), step(jnp.float32(LR)))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(reduce_axes=(0, 1)), "covers every axis"),
        (dict(reduce_axes=(2,)), "reduce_axes"),
        (dict(impl="triton"), "impl"),
        (dict(beta=1.0), "beta"),
        (dict(eps=0.0), "eps"),
    ],
)
def test_bad_arguments_name_the_field(kwargs, match):
    g = jnp.ones((4, 3))
    with pytest.raises(ValueError, match=match):
        column_norm_update(g, lr=LR, **kwargs)
    with pytest.raises(ValueError, match="block_rows"):
        BlockSizes(block_rows=48)


@pytest.mark.parametrize("platform", ["cuda", "tpu"])
def test_lowering_is_portable(platform):
    """The kernel lowers for the GPU (Triton, masked edges) and TPU (Mosaic) backends from this
    CPU host: one pass and two passes, with momentum and weight, ragged shapes."""
    from jax.experimental.pallas import triton as plgpu

    cuda = platform == "cuda"
    cp = plgpu.CompilerParams(num_warps=8) if cuda else None
    bs = BlockSizes(block_rows=256, block_cols=32 if cuda else 128)
    targets = ("__gpu$xla.gpu.triton", "tpu_custom_call")
    checks = [export.DisabledSafetyCheck.custom_call(t) for t in targets]
    for f, n in [(200, 70), (1000, 300)]:
        s = jax.ShapeDtypeStruct((f, n), jnp.bfloat16)
        fn = functools.partial(
            column_norm_update_2d, beta=0.9, eps=1e-8, block_sizes=bs, interpret=False,
            masked_edges=cuda, compiler_params=cp,
        )  # fmt: skip
        exp = export.export(jax.jit(fn), platforms=[platform], disabled_checks=checks)(
            s, s, s, jax.ShapeDtypeStruct((), jnp.float32)
        )
        text = exp.mlir_module()
        assert ("xla.gpu.triton" if cuda else "tpu_custom_call") in text


@pytest.mark.parametrize("f", [13, 70])  # one pass, two passes
def test_triton_lowering_masks_every_tile_access(f, capsys):
    """Triton does not mask blocks that overhang the array (a plain ref[...] is an unmasked
    tt.load/tt.store of the whole tile): with masked_edges every tile access carries a mask."""
    from jax.experimental.pallas import triton as plgpu

    s = jax.ShapeDtypeStruct((f, 21), jnp.float32)
    checks = [export.DisabledSafetyCheck.custom_call("__gpu$xla.gpu.triton")]
    for masked in (True, False):
        fn = functools.partial(
            column_norm_update_2d, beta=0.9, eps=1e-8, block_sizes=SMALL, interpret=False,
            masked_edges=masked, compiler_params=plgpu.CompilerParams(num_warps=4), debug=True,
        )  # fmt: skip
        capsys.readouterr()
        export.export(jax.jit(fn), platforms=["cuda"], disabled_checks=checks)(
            s, s, s, jax.ShapeDtypeStruct((), jnp.float32)
        )
        ir = capsys.readouterr().out
        tile_ops = [
            line
            for line in ir.splitlines()
            if ("tt.load" in line or "tt.store" in line) and "tensor<1x1x" not in line
        ]
        assert len(tile_ops) >= 6
        assert all(("masked_" in line) == masked for line in tile_ops), tile_ops


def test_benchmark_script_runs_on_cpu(tmp_path):
    """launch/benchmark_column_norm.py runs end to end with tiny sizes (numbers not meaningful)."""
    import importlib.util
    import json
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "launch" / "benchmark_column_norm.py"
    spec = importlib.util.spec_from_file_location("benchmark_column_norm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "bench.json"
    args = ["--sizes", "2048", "--fan-in", "64", "--dtypes", "float32", "--repeats", "1"]
    rows = mod.main([*args, "--json", str(out)])
    assert [r["mode"] for r in rows] == ["plain", "momentum"]
    assert all(r["max_abs_diff"] < 1e-6 and r["pallas_GBps"] > 0 for r in rows)
    assert json.loads(out.read_text())["meta"]["meaningful"] is False


@pytest.mark.parametrize(
    "backend",
    [pytest.param("gpu", marks=pytest.mark.gpu), pytest.param("tpu", marks=pytest.mark.tpu)],
)
def test_compiled_kernel_on_accelerator(backend):
    """The compiled (not interpreted) kernel with the backend's default tiles, on ragged shapes
    in one and two passes. Runs only on a GPU/TPU host (`pytest -m gpu` or `-m tpu`)."""
    if jax.default_backend() != backend:
        pytest.skip(f"needs a {backend}")
    cases = [((300, 1000), (0,)), ((1000, 300), (0,)), ((12, 64, 100), (0, 1))]
    for (shape, axes), dtype in itertools.product(cases, (jnp.float32, jnp.bfloat16)):
        g, m, w = _inputs(shape, dtype, seed=7)
        kernel = _variants(
            g, m, w, LR, impl="pallas", axes=axes, bs=None, every=True, compiled=True
        )
        ref = _variants(g, m, w, LR, impl="reference", axes=axes, bs=None, every=True)
        close = _close_f32 if dtype == jnp.float32 else _close_bf16
        for (o, mo), (ro, rmo) in zip(kernel, ref, strict=True):
            close(o, ro)
            if mo is not None:
                close(mo, rmo)


def test_mean_square_of_wide_matrices_is_blocked_but_equal():
    # [64, 6144] takes the column-block path (more than 4096 columns); [3, 4, 5000] too, with
    # two leading axes; a non-leading axis takes the plain mean.
    from kernels_pallas.column_norm.reference import mean_square

    for shape, axes in (((64, 6144), (0,)), ((3, 4, 5000), (0, 1)), ((64, 6144), (1,))):
        x = jax.random.normal(jax.random.key(0), shape)
        want = jnp.mean(jnp.square(x), axis=axes, keepdims=True)
        np.testing.assert_allclose(mean_square(x, axes), want, rtol=1e-6, atol=0)
