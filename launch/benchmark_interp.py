"""Cost of `shared.interp.trace` against the plain decoder forward, measured in one run.

    flock /tmp/bench.lock python launch/benchmark_interp.py [--size smollm2-135m] [--seq 128]
        [--batch 4] [--rounds 7]

Times the jitted plain forward (`model(tokens)`), the traced forward with nothing captured or
changed (must cost the same: it is the same computation), the traced forward capturing the
residual stream and updates, and one with predefined (uniform) attention in every layer.
Random weights of the named `SIZES` shape (speed does not depend on the values). Medians over
--rounds alternating calls, each call's share of other processes' CPU recorded (helpers of
benchmark_smollm2.py); ratios are against the plain forward of this run.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from benchmark_smollm2 import alternate, summary  # noqa: E402
from flax import nnx  # noqa: E402

from shared.interp import AttentionOverride, Intervention, causal_uniform_probs, trace  # noqa: E402
from shared.models.llama import SIZES, Llama  # noqa: E402

RESIDUAL = ("resid_pre", "attn_out", "ffn_out")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="smollm2-135m", choices=sorted(SIZES))
    parser.add_argument("--layers", type=int, default=0, help="0: the size's own depth")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cfg = dataclasses.replace(SIZES[args.size], dtype="float32")
    if args.layers:
        cfg = dataclasses.replace(cfg, num_layers=args.layers)
    graphdef, state = nnx.split(Llama(cfg, rngs=nnx.Rngs(0)))
    tokens = jax.random.randint(jax.random.key(1), (args.batch, args.seq), 0, cfg.vocab_size)
    t = args.seq
    uniform = Intervention(
        attention={
            i: AttentionOverride(causal_uniform_probs(t), jnp.ones((1, 1, t, t), bool))
            for i in range(cfg.num_layers)
        }
    )

    def jitted(fn):
        f = jax.jit(lambda s, x: fn(nnx.merge(graphdef, s), x))
        return lambda: jax.block_until_ready(f(state, tokens))

    fns = {
        "plain forward": jitted(lambda m, x: m(x)),
        "trace, nothing captured": jitted(lambda m, x: trace(m, x)[0]),
        "trace, residual captured": jitted(lambda m, x: trace(m, x, capture=RESIDUAL)),
        "trace, uniform attention": jitted(lambda m, x: trace(m, x, intervention=uniform)[0]),
    }
    calls = alternate(fns, args.rounds)
    base, _ = summary(calls["plain forward"])
    print(
        f"{args.size} ({cfg.num_layers} layers), batch {args.batch} x {t} tokens, "
        f"{jax.devices()[0].platform}, {args.rounds} rounds"
    )
    print("| forward | median s | clean calls | ratio to plain |\n|---|---|---|---|")
    for name, c in calls.items():
        med, clean = summary(c)
        print(f"| {name} | {med:.4f} | {clean} | {med / base:.3f} |")


if __name__ == "__main__":
    main()
