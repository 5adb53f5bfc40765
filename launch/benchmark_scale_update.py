"""One SCALE update against AdamW on the LLaMA-130M parameter set, baselines in the same run.

    python launch/benchmark_scale_update.py [--rounds 3] [--steps 5] [--dtypes float32 bfloat16]
    python launch/benchmark_scale_update.py --official DIR   # + the official PyTorch SCALE step

Every optimizer updates the same random parameters with the same random gradients: a jitted
`update + apply_updates` with parameters and state donated (JAX), or an in-place step under
`torch.no_grad` (PyTorch, when the optional `bench` extra is installed). The implementations take
turns: each round times `--steps` calls of each, and for every call records the share of the
machine's CPU time that other processes used. Reported: the median over clean calls (others
< 5% CPU; all calls, flagged, when fewer than 3 were clean) and ratios against optax AdamW from
the same run. Goals (issue 17): SCALE <= 0.6x optax AdamW (it moves about half AdamW's bytes),
and faster than the PyTorch SCALE step.

"SCALE (torch)" is our own transcription of the official optimizer's math (column RMS over the
fan-in axes for the main matrices, an EMA for the lm_head, Adam with eps before the bias correction
for the gains). With `--official DIR` (a local checkout of OptimAI-Lab/Minimalist_LLM_Pretraining;
nothing of it ships here) the official optimizer itself also runs: its `SCALE` class is loaded
from DIR/mem_eff_pt/pt_scale/scale_optimizer.py by path, and the parameters are grouped as its
mem_eff_pt/utils/train_utils.py groups a LLaMA (attention, MLP and embedding matrices main, the
lm_head secondary with momentum, 1-D gains on Adam), in PyTorch's [out, in] layout.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402

from shared.cpu_share import CpuShare  # noqa: E402
from shared.models.llama import SIZES, Llama  # noqa: E402
from shared.optim import optimizer_memory, scale  # noqa: E402
from shared.optim.labels import fan_in_axes, path_name, scale_label  # noqa: E402

N_PARAMS = 134_105_856
CLEAN = 0.05  # other processes' CPU share below which a timed call counts as clean


def llama130m_params(dtype: str, seed: int = 0):
    """Random parameters with the exact LLaMA-130M shapes and names."""
    abstract = nnx.state(nnx.eval_shape(lambda: Llama(SIZES["130m"], rngs=nnx.Rngs(0))), nnx.Param)
    leaves, treedef = jax.tree.flatten(abstract)
    keys = jax.random.split(jax.random.key(seed), len(leaves))
    arrays = [
        0.02 * jax.random.normal(k, x.shape, dtype) for k, x in zip(keys, leaves, strict=True)
    ]
    return jax.tree.unflatten(treedef, arrays)


def jax_step(tx: optax.GradientTransformation, params, grads):
    """A callable running one jitted update + apply on donated copies of params and state."""

    def step(p, s, g):
        u, s = tx.update(g, s, p)
        return optax.apply_updates(p, u), s

    step = jax.jit(step, donate_argnums=(0, 1))
    box = [jax.tree.map(jnp.copy, params)]
    box.append(jax.tree.map(jnp.copy, tx.init(box[0])))  # no aliased leaves: each donated once

    def run():
        box[0], box[1] = step(box[0], box[1], grads)
        jax.block_until_ready(box)

    run()  # compile
    return run


def torch_steps(params, grads, dtype: str, official: pathlib.Path | None = None) -> dict:
    """PyTorch baselines on the same values: SCALE (our transcription) and torch AdamW."""
    try:
        import torch
    except ImportError:
        return {}
    tdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
    named = [
        (path_name(p), torch.from_numpy(np.asarray(x, np.float32)).to(tdtype))
        for p, x in jax.tree_util.tree_leaves_with_path(params)
    ]
    tgrads = [
        torch.from_numpy(np.asarray(x, np.float32)).to(tdtype) for x in jax.tree.leaves(grads)
    ]
    steps = {}
    for name, kwargs in (
        ("AdamW (torch foreach)", {"foreach": True}),
        ("AdamW (torch fused)", {"fused": True}),
    ):
        ps = [torch.nn.Parameter(x.clone()) for _, x in named]
        for p, g in zip(ps, tgrads):
            p.grad = g
        opt = torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.0, **kwargs)
        opt.step()  # allocate the state
        steps[name] = opt.step
    steps["SCALE (torch)"] = _torch_scale_step(torch, named, tgrads)
    steps["SCALE (torch)"]()
    if official is not None:
        steps["SCALE (official torch)"] = _official_scale_step(official, torch, named, tgrads)
    return steps


def _torch_layout(name: str, x):
    """A Flax matrix in the layout of the PyTorch module it stands for: an embedding table stays
    [vocab, d]; a kernel becomes [out, in] (fan-in axes flattened last)."""
    if x.ndim < 2 or "embed_tokens" in name:
        return x.clone()
    axes = fan_in_axes(name, x)
    rest = [a for a in range(x.ndim) if a not in axes]
    fan_in = math.prod(x.shape[a] for a in axes)
    return x.permute(*rest, *axes).reshape(-1, fan_in).contiguous()


def _official_scale_step(checkout: pathlib.Path, torch, named, grads):
    """One step of the official SCALE optimizer on the same values (see the module docstring)."""
    path = checkout / "mem_eff_pt" / "pt_scale" / "scale_optimizer.py"
    if not path.exists():
        raise SystemExit(f"--official {checkout}: no {path.relative_to(checkout)} there")
    spec = importlib.util.spec_from_file_location("official_scale_optimizer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    groups: dict[str, list] = {"main": [], "last": [], "oned": []}
    id_to_name = {}
    for (name, x), g in zip(named, grads, strict=True):
        p = torch.nn.Parameter(_torch_layout(name, x))
        p.grad = _torch_layout(name, g)
        groups[scale_label(name, x.ndim)].append(p)
        id_to_name[id(p)] = name
    opt = module.SCALE(
        lr=1e-3,
        wd=0.0,
        main_params=groups["main"],
        secondary_params=groups["last"],
        oned_params=groups["oned"],
        id_to_name=id_to_name,
        momentum=0.9,
        adam_lr=1e-3,
    )
    opt.step()  # allocate the state
    return opt.step


def _torch_scale_step(torch, named, grads, lr=1e-3, beta=0.9, eps=1e-8, b1=0.9, b2=0.999):
    """One SCALE step in place: main = G / max(rms over fan-in, eps); lm_head = the same of an
    EMA of G; 1-D gains = Adam with eps added to sqrt(v) before the bias correction."""
    params = [x.clone() for _, x in named]
    state = {}
    count = [0]

    @torch.no_grad()
    def step():
        count[0] += 1
        t = count[0]
        for i, ((name, _), p, g) in enumerate(zip(named, params, grads)):
            label = scale_label(name, p.ndim)
            if label == "oned":
                m, v = state.setdefault(i, (torch.zeros_like(p), torch.zeros_like(p)))
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                corr = math.sqrt(1 - b2**t) / (1 - b1**t)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-lr * corr)
                continue
            x = g
            if label == "last":
                m = state.setdefault(i, torch.zeros_like(p))
                x = m.lerp_(g, 1 - beta)
            axes = fan_in_axes(name, p)
            rms = x.float().square().mean(dim=axes, keepdim=True).sqrt_().clamp_(min=eps)
            p.addcdiv_(x, rms.to(p.dtype), value=-lr)

    return step


def measure(steps: dict, rounds: int, calls: int) -> dict[str, list[tuple[float, float]]]:
    """Round-robin timing: {name: [(seconds, other processes' CPU share), ...]}."""
    share, out = CpuShare(), {name: [] for name in steps}
    for _ in range(rounds):
        for name, run in steps.items():
            for _ in range(calls):
                share.start()
                t0 = time.perf_counter()
                run()
                out[name].append((time.perf_counter() - t0, share.stop()))
    return out


def clean_median(samples: list[tuple[float, float]]) -> tuple[float, str]:
    clean = [t for t, s in samples if s < CLEAN]
    if len(clean) >= 3:
        return statistics.median(clean), f"{len(clean)}/{len(samples)}"
    return statistics.median(t for t, _ in samples), f"{len(clean)}/{len(samples)} (all used)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5, help="timed calls per implementation per round")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument(
        "--official", type=pathlib.Path, help="checkout of OptimAI-Lab/Minimalist_LLM_Pretraining"
    )
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
        steps = {name: jax_step(tx, params, grads) for name, tx in txs.items()}
        state_bytes = {name: optimizer_memory(tx, params).state_bytes for name, tx in txs.items()}
        steps.update(torch_steps(params, grads, dtype, args.official))
        times = measure(steps, args.rounds, args.steps)
        base = clean_median(times["AdamW (optax)"])[0]
        for name, samples in times.items():
            sec, clean = clean_median(samples)
            rows.append((name, dtype, sec, sec / base, clean, state_bytes.get(name)))
        del params, grads, steps
    print(f"\nmedian seconds per update; rounds {args.rounds} x {args.steps} calls; clean = other")
    print(f"processes used < {CLEAN:.0%} of the CPU during the call")
    print("| optimizer | dtype | seconds | / optax AdamW | clean calls | state bytes |")
    print("|---|---|---|---|---|---|")
    for name, dtype, sec, ratio, clean, state in rows:
        state = f"{state:,}" if state is not None else "–"
        print(f"| {name} | {dtype} | {sec:.3f} | {ratio:.2f} | {clean} | {state} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
