"""Speed of the FP4 attention kernels: forward and forward+backward against bf16 flash attention.

    python launch/benchmark_fp4_attention.py [--seq-lens 1024 2048 4096 8192] [--batch 4]
        [--heads 16] [--head-dim 128] [--dtype bfloat16] [--repeats 20] [--causal 1]
        [--block-q 32 --block-k 32] [--json out.json]

Methods, timed in the same process on the same inputs [B, T, N, H]:
  fp4_attn_qat   the Pallas FP4 kernel, mode "attn_qat" (fake-quantized Q/K/V and P, O' output)
  pallas_bf16    the same Pallas kernel, mode "bf16" (no quantization): the cost of quantization
  jax_mha        jax.experimental.pallas.ops.gpu.attention.mha, if it imports and runs here
  xla            plain softmax attention compiled by XLA (shared.models.attention)
Each is jitted; "fwd" times the output, "fwd+bwd" times the gradient of sum(out * dO) wrt q, k, v.
Printed: median milliseconds over --repeats, achieved TFLOP/s (4*B*N*T*S*H for the forward, x3.5
for forward+backward, halved when causal) and the ratio of each time to the XLA time.

Devices without FP4 units (H200, TPU) run the fake-quantized kernel with bf16/f32 dots, so the FP4
kernel is expected to be slower than bf16 here: the quantization is extra work, not a saving. On
CPU the Pallas kernels run in interpret mode with tiny sizes: the script is then only exercised and
its numbers say nothing about the kernels' speed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from kernels_pallas.fp4_attention import BlockSizes, fp4_attention  # noqa: E402
from shared.models.attention import dot_product_attention  # noqa: E402

ACCEL_SEQ_LENS = [1024, 2048, 4096, 8192]
CPU_SEQ_LENS = [64, 128]


def _methods(causal: bool, bs: BlockSizes, interpret: bool) -> dict:
    def kernel(mode):
        return lambda q, k, v: fp4_attention(
            q, k, v, mode=mode, causal=causal, impl="pallas", block_sizes=bs, interpret=interpret
        )

    def xla(q, k, v):
        t = q.shape[1]
        mask = jnp.tril(jnp.ones((t, t), bool)) if causal else None
        return dot_product_attention(q, k, v, mask)

    methods = {"fp4_attn_qat": kernel("attn_qat"), "pallas_bf16": kernel("bf16")}
    try:
        from jax.experimental.pallas.ops.gpu import attention as gpu_attention

        blocks = gpu_attention.BlockSizes(
            block_q=bs.block_q, block_k=bs.block_k, block_q_dkv=bs.block_q_dkv,
            block_kv_dkv=bs.block_kv_dkv, block_q_dq=bs.block_q_dq, block_kv_dq=bs.block_kv_dq,
        )  # fmt: skip

        def mha(q, k, v):
            return gpu_attention.mha(
                q, k, v, None, sm_scale=q.shape[-1] ** -0.5, causal=causal,
                block_sizes=blocks, interpret=interpret,
            )  # fmt: skip

        methods["jax_mha"] = mha
    except ImportError as err:  # the Triton backend is optional
        print(f"jax_mha skipped: {err}")
    methods["xla"] = xla
    return methods


def _median_ms(fn, args, repeats: int) -> float:
    jax.block_until_ready(fn(*args))  # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    on_cpu = jax.default_backend() == "cpu"
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq-lens", type=int, nargs="+", default=None)
    parser.add_argument("--batch", type=int, default=1 if on_cpu else 4)
    parser.add_argument("--heads", type=int, default=2 if on_cpu else 16)
    parser.add_argument("--head-dim", type=int, default=32 if on_cpu else 128)
    parser.add_argument("--dtype", default="float32" if on_cpu else "bfloat16")
    parser.add_argument("--repeats", type=int, default=3 if on_cpu else 20)
    parser.add_argument("--causal", type=int, default=1)
    parser.add_argument("--block-q", type=int, default=32)
    parser.add_argument("--block-k", type=int, default=32)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    seq_lens = args.seq_lens or (CPU_SEQ_LENS if on_cpu else ACCEL_SEQ_LENS)
    bq, bk = args.block_q, args.block_k
    bs = BlockSizes(block_q=bq, block_k=bk, block_q_dkv=bq, block_kv_dkv=bk, block_q_dq=bq,
                    block_kv_dq=bk)  # fmt: skip
    methods = _methods(bool(args.causal), bs, interpret=on_cpu)
    print(f"device: {jax.devices()[0].device_kind} ({jax.default_backend()})")
    if on_cpu:
        print("CPU: Pallas runs in interpret mode; these numbers say nothing about kernel speed.")
    rows = []
    for t in seq_lens:
        keys = jax.random.split(jax.random.key(t), 4)
        shape = (args.batch, t, args.heads, args.head_dim)
        q, k, v, do = (jax.random.normal(key, shape, args.dtype) for key in keys)
        flops = 4 * args.batch * args.heads * t * t * args.head_dim * (0.5 if args.causal else 1)
        times = {}
        for name, fn in methods.items():
            fwd = jax.jit(fn)
            grad = jax.jit(jax.grad(lambda q, k, v, g, f=fn: jnp.sum(f(q, k, v) * g), (0, 1, 2)))
            try:
                times[name] = (
                    _median_ms(fwd, (q, k, v), args.repeats),
                    _median_ms(grad, (q, k, v, do), args.repeats),
                )
            except Exception as err:  # report, keep benchmarking the others
                print(f"{name} at T={t} failed: {type(err).__name__}: {str(err)[:200]}")
        if "xla" in times and "pallas_bf16" in times:  # the unquantized kernel must match XLA
            outs = [
                jax.jit(methods[m])(q, k, v).astype(jnp.float32) for m in ("pallas_bf16", "xla")
            ]
            diff = jnp.abs(outs[0] - outs[1]).max()
            print(f"T={t}: max |pallas_bf16 - xla| = {float(diff):.2e}")
        base = times.get("xla")
        for name, (f_ms, fb_ms) in times.items():
            row = {
                "method": name, "seq_len": t, "fwd_ms": f_ms, "fwd_bwd_ms": fb_ms,
                "fwd_tflops": flops / f_ms / 1e9, "fwd_bwd_tflops": 3.5 * flops / fb_ms / 1e9,
                "fwd_vs_xla": f_ms / base[0] if base else None,
                "fwd_bwd_vs_xla": fb_ms / base[1] if base else None,
            }  # fmt: skip
            rows.append(row)
    print(
        "| method | T | fwd ms | fwd TFLOP/s | fwd / xla | fwd+bwd ms | TFLOP/s | fwd+bwd / xla |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = "" if r["fwd_vs_xla"] is None else f"{r['fwd_vs_xla']:.2f}"
        ratio_b = "" if r["fwd_bwd_vs_xla"] is None else f"{r['fwd_bwd_vs_xla']:.2f}"
        print(
            f"| {r['method']} | {r['seq_len']} | {r['fwd_ms']:.3f} | {r['fwd_tflops']:.3f} | "
            f"{ratio} | {r['fwd_bwd_ms']:.3f} | {r['fwd_bwd_tflops']:.3f} | {ratio_b} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"device": str(jax.devices()[0]), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
