"""SmolLM2-135M forward throughput in Flax on this machine, with a same-run PyTorch baseline.

    python launch/benchmark_smollm2.py [--seq 256] [--batches 1 8] [--repeats 5]

Prints tokens/s (median over repeats, after one warm-up/compile call) for the jitted Flax
forward at each batch size. When `torch` is installed (`pip install torch`; not a dependency of
the repo), the same weights also run through a plain PyTorch forward written here, and the table
gives Flax / PyTorch ratios measured in the same process, plus the largest logit difference
between the two (a check that both compute the same function).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402

from shared.models.pretrained.gguf_file import open_gguf  # noqa: E402
from shared.models.pretrained.smollm2 import (  # noqa: E402
    config_from_gguf,
    hf_state_from_gguf,
    load_smollm2,
)


def _median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up (compiles for jax)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def torch_forward(cfg, weights):
    """A plain PyTorch LLaMA forward over the same float32 weights (Flax [in, out] kernels)."""
    import torch

    w = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in weights.items()}
    hd, groups = cfg.resolved_head_dim, cfg.num_heads // cfg.num_kv_heads
    inv = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd)

    def rms(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.norm_eps) * g

    def rope(x, cos, sin):  # x [B, N, T, H], rotate_half pairs (i, i + H/2)
        x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    @torch.inference_mode()
    def forward(tokens: np.ndarray) -> torch.Tensor:
        ids = torch.from_numpy(tokens.astype(np.int64))
        b, t = ids.shape
        ang = torch.arange(t, dtype=torch.float32)[:, None] * inv
        cos, sin = torch.cat([ang, ang], -1).cos(), torch.cat([ang, ang], -1).sin()
        x = w[("embed_tokens", "embedding")][ids]
        for i in range(cfg.num_layers):
            p = lambda *n: w[("layers", i, *n)]  # noqa: B023
            h = rms(x, p("input_layernorm", "weight"))
            q = (h @ p("self_attn", "q_proj", "kernel")).view(b, t, -1, hd).transpose(1, 2)
            k = (h @ p("self_attn", "k_proj", "kernel")).view(b, t, -1, hd).transpose(1, 2)
            v = (h @ p("self_attn", "v_proj", "kernel")).view(b, t, -1, hd).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + a.transpose(1, 2).reshape(b, t, -1) @ p("self_attn", "o_proj", "kernel")
            h = rms(x, p("post_attention_layernorm", "weight"))
            gate = torch.nn.functional.silu(h @ p("mlp", "gate_proj", "kernel"))
            x = x + (gate * (h @ p("mlp", "up_proj", "kernel"))) @ p("mlp", "down_proj", "kernel")
        x = rms(x, w[("norm", "weight")])
        return x @ w[("embed_tokens", "embedding")].T

    return forward


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    model = load_smollm2()
    graphdef, state = nnx.split(model)
    flax_fwd = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))
    try:
        import torch

        reader = open_gguf()
        cfg = config_from_gguf(reader)
        torch_fwd = torch_forward(cfg, hf_state_from_gguf(reader, cfg))
        torch_note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    except ImportError:
        torch_fwd, torch_note = None, "torch not installed: no same-run baseline"
    print(f"SmolLM2-135M float32 forward, sequence {args.seq}, median of {args.repeats}")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; {torch_note}")
    print("| batch | Flax tokens/s | PyTorch tokens/s | Flax / PyTorch | max |logit diff| |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for b in args.batches:
        tokens = rng.integers(0, model.cfg.vocab_size, (b, args.seq)).astype(np.int32)
        x = jnp.asarray(tokens)
        t_flax = _median_seconds(lambda x=x: flax_fwd(state, x).block_until_ready(), args.repeats)
        row = f"| {b} | {b * args.seq / t_flax:.0f} |"
        if torch_fwd is None:
            print(row + " – | – | – |")
            continue
        t_torch = _median_seconds(lambda t=tokens: torch_fwd(t), args.repeats)
        diff = np.abs(np.asarray(flax_fwd(state, x)) - torch_fwd(tokens).numpy()).max()
        print(row + f" {b * args.seq / t_torch:.0f} | {t_torch / t_flax:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
