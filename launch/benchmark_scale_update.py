"""Time of one SCALE update and one optax.adamw update on the LLaMA-130M parameter set.

    python launch/benchmark_scale_update.py [--repeats 7] [--dtypes float32 bfloat16]

Both optimizers run in the same process on the same parameters and gradients: a jitted
`update + apply_updates` with the parameters and state donated, median wall time over repeats
after one compile call. The official PyTorch figures (2-core CPU, ../shared/papers/scale.md) are
printed beside ours; they were measured on another machine, so only our own ratio is like for like.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402

from shared.models.llama import SIZES, Llama  # noqa: E402
from shared.optim import optimizer_memory, scale  # noqa: E402

N_PARAMS = 134_105_856
# Official PyTorch optimizer.step() seconds on a 2-core CPU (spec's speed anchors).
TORCH = {
    ("SCALE", "float32"): 0.62,
    ("SCALE", "bfloat16"): 0.47,
    ("AdamW (torch default)", "float32"): 0.80,
    ("AdamW (torch fused)", "float32"): 0.15,
    ("AdamW (torch fused)", "bfloat16"): 0.10,
}


def llama130m_params(dtype: str, seed: int = 0):
    """Random parameters with the exact LLaMA-130M shapes and names."""
    abstract = nnx.state(nnx.eval_shape(lambda: Llama(SIZES["130m"], rngs=nnx.Rngs(0))), nnx.Param)
    leaves, treedef = jax.tree.flatten(abstract)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    arrays = [
        0.02 * jax.random.normal(k, x.shape, dtype) for k, x in zip(keys, leaves, strict=True)
    ]
    return jax.tree.unflatten(treedef, arrays)


def time_update(tx: optax.GradientTransformation, params, grads, repeats: int) -> float:
    """Median seconds of one jitted update + apply (params and state donated)."""

    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    step = jax.jit(step, donate_argnums=(0, 1))
    p = jax.tree.map(jnp.copy, params)
    s = jax.tree.map(jnp.copy, tx.init(p))  # no aliased leaves: each buffer donated once
    p, s = step(p, s, grads)  # compile
    jax.block_until_ready((p, s))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        p, s = step(p, s, grads)
        jax.block_until_ready((p, s))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    args = ap.parse_args(argv)
    print(f"device: {jax.devices()[0].device_kind} x{jax.device_count()} ({jax.default_backend()})")
    rows = []
    for dtype in args.dtypes:
        params = llama130m_params(dtype)
        n = sum(x.size for x in jax.tree.leaves(params))
        if n != N_PARAMS:
            raise SystemExit(f"parameter count {n} != {N_PARAMS}: the 130M config changed")
        grads = llama130m_params(dtype, seed=1)
        txs = {"SCALE": scale(1e-3, 20_000), "AdamW (optax)": optax.adamw(1e-3, weight_decay=0.0)}
        secs = {}
        for name, tx in txs.items():
            secs[name] = time_update(tx, params, grads, args.repeats)
            mem = optimizer_memory(tx, params)
            rows.append((name, dtype, secs[name], mem.state_bytes))
        print(
            f"{dtype}: SCALE {secs['SCALE']:.3f} s, AdamW {secs['AdamW (optax)']:.3f} s, "
            f"SCALE / AdamW = {secs['SCALE'] / secs['AdamW (optax)']:.3f}",
            flush=True,
        )
        del params, grads
    print("\n| optimizer | dtype | ours (s, median) | state bytes | official PyTorch (s) |")
    print("|---|---|---|---|---|")
    for name, dtype, sec, state in rows:
        torch = TORCH.get((name, dtype))
        print(f"| {name} | {dtype} | {sec:.3f} | {state:,} | {torch if torch else '–'} |")
    for (name, dtype), sec in TORCH.items():
        if not name.startswith("SCALE"):
            print(f"| {name} | {dtype} | – | – | {sec} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
