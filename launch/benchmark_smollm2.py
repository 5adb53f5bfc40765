"""SmolLM2-135M float32 throughput in Flax on this CPU, against same-run PyTorch baselines.

    flock /tmp/bench.lock python launch/benchmark_smollm2.py [--seq 256] [--batches 1 8]
        [--rounds 3] [--prompt 32] [--new 32]

Table 1, forward (logits of every position, sequence --seq): the jitted Flax forward, a plain
PyTorch forward written here, and HF transformers' `LlamaForCausalLM` (sdpa attention), all on
the same float32 weights (dequantized from the GGUF file once, offline). Table 2, batched greedy
generation of --new tokens after a --prompt-token random prompt: our KV-cache decoding
(`shared.models.sampling.generate`) against HF `generate` (its KV cache), tokens/s counting
generated tokens only (prefill included in the time).

The implementations alternate in --rounds rounds (the order flips every round), after one
warm-up (compile) call each. Every timed call records the CPU share of other processes on the
machine over the call (/proc/stat busy time minus this process's /proc/self/stat utime+stime);
a call is clean when others used < 5%. Tables give medians of clean calls and how many calls
were clean; where none was clean, the median of all calls, marked *. Ratios are of numbers
measured in this run. The logit columns check that the three forwards compute one function;
"same tokens" is the fraction of generated tokens where our greedy decoding and HF's agree.
Needs `torch` and `transformers` (`pip install -e .[bench]`); without them only Flax is timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Compiled programs are reused across runs (about a minute of XLA compiles on 2 cores).
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR",
    str(Path(__file__).resolve().parents[1] / "runs" / ".jax_cache_bench"),
)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402

from shared.models.pretrained.gguf_file import open_gguf  # noqa: E402
from shared.models.pretrained.smollm2 import (  # noqa: E402
    config_from_gguf,
    hf_state_from_gguf,
    llama_from_state,
)
from shared.models.sampling import generate  # noqa: E402

CLEAN = 0.05  # a call is clean when other processes used less than this share of the CPUs
_TICK, _NCPU = os.sysconf("SC_CLK_TCK"), os.cpu_count() or 1


def _busy_ticks() -> int:
    """Busy clock ticks of the whole machine (all CPUs; idle and iowait excluded)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4]


def _own_ticks() -> int:
    """utime + stime of this process, all threads (clock ticks)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def timed(fn) -> tuple[float, float]:
    """(seconds, other processes' CPU share over the call, 0..1) of one call of fn."""
    b0, o0, t0 = _busy_ticks(), _own_ticks(), time.perf_counter()
    fn()
    t1 = time.perf_counter()
    others = (_busy_ticks() - b0) - (_own_ticks() - o0)
    return t1 - t0, max(0.0, others / (_TICK * _NCPU * (t1 - t0)))


def alternate(fns: dict, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Warm each fn once, then `rounds` rounds calling each once, the order flipped each round."""
    for fn in fns.values():
        fn()
    calls: dict[str, list] = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            calls[name].append(timed(fns[name]))
    return calls


def summary(calls: list[tuple[float, float]]) -> tuple[float, str]:
    """(median seconds of the clean calls, "k/n" clean; a trailing * where none was clean)."""
    clean = [t for t, other in calls if other < CLEAN]
    if clean:
        return statistics.median(clean), f"{len(clean)}/{len(calls)}"
    return statistics.median(t for t, _ in calls), f"0/{len(calls)}*"


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


def hf_model(cfg, weights):
    """HF transformers `LlamaForCausalLM` (float32, sdpa attention) holding the same weights."""
    import torch
    import transformers

    hf_cfg = transformers.LlamaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.dim,
        intermediate_size=cfg.ffn_dim,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        head_dim=cfg.resolved_head_dim,
        max_position_embeddings=cfg.max_seq_len,
        rms_norm_eps=cfg.norm_eps,
        rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_base},
        tie_word_embeddings=cfg.tie_embeddings,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
    )
    hf_cfg._attn_implementation = "sdpa"
    names = {"embed_tokens": "model.embed_tokens.weight", "norm": "model.norm.weight"}
    state = {}
    for key, w in weights.items():
        if key[0] == "layers":  # ("layers", i, module, proj, "kernel" | "weight")
            name = f"model.layers.{key[1]}." + ".".join(key[2:-1]) + ".weight"
            w = w.T if key[-1] == "kernel" else w  # Flax [in, out] -> torch [out, in]
        else:
            name = names[key[0]]
        state[name] = torch.from_numpy(np.ascontiguousarray(w))
    model = transformers.LlamaForCausalLM(hf_cfg)
    result = model.load_state_dict(state, strict=False)
    if result.unexpected_keys or set(result.missing_keys) - {"lm_head.weight"}:
        raise ValueError(f"HF state mismatch: {result}")
    model.tie_weights()  # lm_head shares the embedding
    if model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr():
        raise ValueError("HF lm_head is not tied to the embedding")
    return model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=256, help="forward sequence length")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per implementation")
    parser.add_argument("--prompt", type=int, default=32, help="generation: prompt tokens")
    parser.add_argument("--new", type=int, default=32, help="generation: new tokens (0: skip)")
    args = parser.parse_args()

    reader = open_gguf()
    cfg = config_from_gguf(reader)
    weights = hf_state_from_gguf(reader, cfg)
    model = llama_from_state(cfg, weights)
    graphdef, state = nnx.split(model)
    flax_fwd = jax.jit(lambda s, x: nnx.merge(graphdef, s)(x))
    try:
        import torch
        import transformers

        torch_fwd, hf = torch_forward(cfg, weights), hf_model(cfg, weights)
        note = (
            f"torch {torch.__version__} ({torch.get_num_threads()} threads), "
            f"transformers {transformers.__version__}"
        )
    except ImportError as e:
        torch_fwd = hf = None
        note = f"no PyTorch baselines ({e.name} not installed: pip install -e .[bench])"
    print(f"SmolLM2-135M float32 on {_NCPU} CPUs; jax {jax.__version__}; {note}")
    print(f"{args.rounds} alternating rounds; clean = other processes < {CLEAN:.0%} CPU")
    print(f"\nForward, sequence {args.seq} (tokens/s, median of clean calls)")
    print(
        "| batch | Flax | plain torch | HF | Flax / torch | Flax / HF | clean F/T/HF "
        "| max abs logit diff vs torch / HF |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for b in args.batches:
        tokens = rng.integers(0, cfg.vocab_size, (b, args.seq)).astype(np.int32)
        x = jnp.asarray(tokens)
        fns = {"flax": lambda x=x: flax_fwd(state, x).block_until_ready()}
        if hf is not None:
            ids = torch.from_numpy(tokens.astype(np.int64))
            fns["torch"] = lambda t=tokens: torch_fwd(t)

            def hf_fwd(ids=ids):
                with torch.inference_mode():
                    return hf(input_ids=ids, use_cache=False).logits

            fns["hf"] = hf_fwd
        res = {k: summary(v) for k, v in alternate(fns, args.rounds).items()}
        tps = {k: b * args.seq / t for k, (t, _) in res.items()}
        if hf is None:
            print(f"| {b} | {tps['flax']:.0f} | – | – | – | – | {res['flax'][1]} | – |")
            continue
        ours = np.asarray(flax_fwd(state, x))
        d_torch = np.abs(ours - fns["torch"]().numpy()).max()
        d_hf = np.abs(ours - fns["hf"]().numpy()).max()
        print(
            f"| {b} | {tps['flax']:.0f} | {tps['torch']:.0f} | {tps['hf']:.0f} "
            f"| {tps['flax'] / tps['torch']:.2f} | {tps['flax'] / tps['hf']:.2f} "
            f"| {res['flax'][1]} / {res['torch'][1]} / {res['hf'][1]} "
            f"| {d_torch:.1e} / {d_hf:.1e} |"
        )
    if args.new < 1 or hf is None:
        return
    print(
        f"\nBatched greedy generation, {args.prompt}-token prompt, {args.new} new tokens "
        "(generated tokens/s, prefill included)"
    )
    print("| batch | Flax KV cache | HF generate | Flax / HF | clean F/HF | same tokens |")
    print("|---|---|---|---|---|---|")
    for b in args.batches:
        prompt = rng.integers(3, cfg.vocab_size, (b, args.prompt)).astype(np.int32)
        ids = torch.from_numpy(prompt.astype(np.int64))
        out: dict[str, np.ndarray] = {}

        def ours(prompt=prompt, out=out):
            out["flax"] = generate(model, prompt, args.new)

        def theirs(ids=ids, out=out):
            with torch.inference_mode():
                seq = hf.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=args.new,
                    min_new_tokens=args.new,
                    do_sample=False,
                    pad_token_id=2,
                )
            out["hf"] = seq[:, args.prompt :].numpy()

        calls = alternate({"flax": ours, "hf": theirs}, args.rounds)
        res = {k: summary(v) for k, v in calls.items()}
        tps = {k: b * args.new / t for k, (t, _) in res.items()}
        same = float(np.mean(out["flax"] == out["hf"]))
        print(
            f"| {b} | {tps['flax']:.1f} | {tps['hf']:.1f} | {tps['flax'] / tps['hf']:.2f} "
            f"| {res['flax'][1]} / {res['hf'][1]} | {same:.3f} |"
        )


if __name__ == "__main__":
    main()
