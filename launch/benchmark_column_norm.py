"""Achieved bandwidth of the column-normalized update: Pallas kernel vs the jitted XLA reference.

    python launch/benchmark_column_norm.py [--sizes 1e6 1e7 1e8 1e9] [--fan-in 512 4096]
        [--dtypes float32 bfloat16] [--repeats 20] [--block-rows 512 --block-cols 32]
        [--json out.json]

For each size (elements of one weight), fan-in, dtype and mode (plain: W <- W - lr*C(G);
momentum: M <- EMA(M, G), W <- W - lr*C(M)) it times one update of a [fan_in, size/fan_in] weight,
kernel and reference in the same process, both jitted with W and M donated (updated in place), and
prints the median time and the achieved GB/s, counting the ideal traffic of one read of G, M, W and
one write of W, M (the same bytes for both, so the GB/s ratio is the time ratio). Sizes that do not
fit the device memory are skipped. The first call of each is also compared (max |kernel - ref|).

On CPU the kernel runs in Pallas interpret mode and the default sizes are tiny: the script is then
only exercised, and its numbers say nothing about the kernel's speed.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from kernels_pallas.column_norm import BlockSizes, column_norm_update  # noqa: E402

ACCEL_SIZES = [1e6, 4e6, 16e6, 64e6, 256e6, 1e9]
CPU_SIZES = [16_384, 131_072]
LR = 1e-3


def _memory_limit_bytes() -> int:
    stats = jax.devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"])
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _step_fn(impl: str, momentum: bool, block_sizes: BlockSizes | None):
    """A jitted update (m, w) -> (new m, new w), W and M donated; m is None in plain mode."""
    update = functools.partial(column_norm_update, lr=LR, impl=impl, block_sizes=block_sizes)
    if momentum:
        return jax.jit(lambda g, m, w: update(g, m, w)[::-1], donate_argnums=(1, 2))
    step = jax.jit(lambda g, w: update(g, None, w)[0], donate_argnums=1)
    return lambda g, m, w: (None, step(g, w))


def _median_seconds(step, g, m, w, repeats: int) -> float:
    m, w = step(g, m, w)  # warm-up: compiles
    jax.block_until_ready(w)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        m, w = step(g, m, w)
        jax.block_until_ready(w)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bench_one(
    size: int, fan_in: int, dtype, momentum: bool, repeats: int, block_sizes=None
) -> dict | None:
    fan_out = max(1, round(size / fan_in))
    shape = (fan_in, fan_out)
    n = fan_in * fan_out
    itemsize = jnp.dtype(dtype).itemsize
    traffic = n * itemsize * (5 if momentum else 3)  # read G, M, W; write W, M
    resident = n * itemsize * 3 * 2  # two copies (kernel, reference) of G, M, W
    if resident > 0.8 * _memory_limit_bytes():
        print(f"skip {shape} {jnp.dtype(dtype).name}: needs ~{resident / 2**30:.1f} GiB")
        return None
    kg, km, kw = jax.random.split(jax.random.key(0), 3)
    make = lambda k: jax.random.normal(k, shape, jnp.float32).astype(dtype)  # noqa: E731
    g = make(kg)
    check = {}
    row = dict(
        elements=n, fan_in=fan_in, fan_out=fan_out, dtype=jnp.dtype(dtype).name,
        mode="momentum" if momentum else "plain", ideal_bytes=traffic,
    )  # fmt: skip
    for impl in ("pallas", "reference"):
        step = _step_fn(impl, momentum, block_sizes)
        _, first_w = step(g, make(km) if momentum else None, make(kw))
        check[impl] = first_w.astype(jnp.float32)
        seconds = _median_seconds(step, g, make(km) if momentum else None, make(kw), repeats)
        row[f"{impl}_s"] = seconds
        row[f"{impl}_GBps"] = traffic / seconds / 1e9
    row["max_abs_diff"] = float(jnp.max(jnp.abs(check["pallas"] - check["reference"])))
    row["ratio"] = row["pallas_GBps"] / row["reference_GBps"]
    return row


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=float, nargs="+", default=None, help="elements per weight")
    p.add_argument("--fan-in", type=int, nargs="+", default=None, help="rows (reduced axis)")
    p.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    p.add_argument("--repeats", type=int, default=None, help="timed calls (median)")
    p.add_argument("--block-rows", type=int, default=None, help="kernel tile rows (power of 2)")
    p.add_argument("--block-cols", type=int, default=None, help="kernel tile columns")
    p.add_argument("--json", type=Path, default=None, help="also write the rows here")
    args = p.parse_args(argv)
    on_cpu = jax.default_backend() == "cpu"
    sizes = args.sizes or (CPU_SIZES if on_cpu else ACCEL_SIZES)
    fan_ins = args.fan_in or ([64, 1024] if on_cpu else [512, 4096])
    repeats = args.repeats or (3 if on_cpu else 20)
    block_sizes = None
    if args.block_rows or args.block_cols:
        block_sizes = BlockSizes(
            block_rows=args.block_rows or 512, block_cols=args.block_cols or 32
        )
    device = jax.devices()[0].device_kind
    print(f"device: {device} ({jax.default_backend()}), jax {jax.__version__}, {block_sizes}")
    if on_cpu:
        print("CPU: the kernel runs in Pallas interpret mode; these numbers are NOT meaningful.")
    rows = []
    header = "| elements | fan_in | dtype | mode | kernel GB/s | XLA ref GB/s | ratio | max diff |"
    print(header + "\n|" + "---|" * 8)
    for size in sizes:
        for fan_in in fan_ins:
            for dtype in args.dtypes:
                for momentum in (False, True):
                    r = bench_one(
                        int(size), fan_in, jnp.dtype(dtype), momentum, repeats, block_sizes
                    )
                    if r is None:
                        continue
                    rows.append(r)
                    print(
                        f"| {r['elements']:,} | {fan_in} | {r['dtype']} | {r['mode']} "
                        f"| {r['pallas_GBps']:.2f} | {r['reference_GBps']:.2f} "
                        f"| {r['ratio']:.2f} | {r['max_abs_diff']:.1e} |",
                        flush=True,
                    )
    if args.json:
        meta = dict(
            device=device, backend=jax.default_backend(), meaningful=not on_cpu,
            block_sizes=str(block_sizes or "backend default"),
        )  # fmt: skip
        args.json.write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    return rows


if __name__ == "__main__":
    main()
