"""T-JEPA pretraining throughput at the official settings, beside the official PyTorch code.

    python projects/var_jepa/benchmark.py [--configs small jannis] [--steps 30] [--buckets 3]

One step = mask sampling, target forward, context forward, predictor, loss, backward, optimizer,
EMA: the jitted `train_tjepa` step, called through the training loop's `step_fn`. Defaults are
the official ones (jose-melo/t-jepa, scripts/launch_tjepa.sh): dropout 0.00185 in the encoders and
0.00193 in the predictor, active in training on the attention probabilities too; per-batch mask
sizes (n_ctx, n_trgt) drawn as the official MaskCollator draws them (masks.sample_sizes). Each
size axis is padded to one of `--buckets` edges (pretrain.PretrainConfig.size_buckets); every
bucket pair is compiled before timing (compile seconds are printed apart).

Configs (the Var-JEPA spec): "small" = 14 numerical features, hidden 64, 4+4 layers, 2 encoder
heads, encoder FF 64, pred_dim 16, 4 predictor heads, predictor FF 256, batch 256; "jannis" = 54
features, the jannis script's model (16+16 layers), batch 512.

Other processes' CPU share is recorded for every step (cpu_share.py, /proc ticks); rows/s is
batch / the median time of the clean steps (share < --clean, 5% by default), or of all steps,
flagged, when none is clean. `--json` prints one JSON line per config with every step, which the
same-run comparison with the official code reads. Only a ratio measured in the same run on the
same machine means anything (machines differ by up to 2x).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import pathlib
import re
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from projects.var_jepa import experiment, masks, pretrain
from projects.var_jepa.tjepa_model import ModelConfig
from shared.cpu_share import CpuShare
from shared.data.tabular import TabularData

_PAPER = experiment.CONFIGS["paper"].model  # the official jannis script's model and dropout
CONFIGS: dict[str, tuple[int, ModelConfig, int]] = {  # name: (features, model, batch)
    "small": (14, dataclasses.replace(_PAPER, num_layers=4, pred_layers=4), 256),
    "jannis": (54, _PAPER, 512),
}


def measure(name: str, steps: int, buckets: int, seed: int = 0) -> dict:
    """Compiles every bucket pair, then times `steps` steps; returns per-step records."""
    n_features, model_cfg, batch = CONFIGS[name]
    rng = np.random.default_rng(seed)
    rows = 4 * batch
    data = _synthetic(name, n_features, rows, rng)
    mask_cfg = masks.MaskConfig()
    cfg = pretrain.PretrainConfig(
        steps=100_000, batch_size=batch, checkpoint_every=0, size_buckets=buckets
    )
    state, step_fn, _ = pretrain.tjepa_setup(data, model_cfg, mask_cfg, cfg, seed)
    b = {"x_num": jnp.asarray(data.x_num[:batch]), "x_cat": jnp.asarray(data.x_cat[:batch])}
    (c_lo, _), (t_lo, _) = masks.size_ranges(n_features, mask_cfg)
    max_ctx, max_trgt = masks.max_sizes(n_features, mask_cfg)
    pairs = list(
        itertools.product(
            masks.bucket_edges(c_lo, max_ctx, buckets), masks.bucket_edges(t_lo, max_trgt, buckets)
        )
    )
    t0 = time.perf_counter()
    for pads in pairs:  # compile (the result is thrown away: state stays the initial one)
        sizes = jnp.asarray(pads, jnp.int32)
        jax.block_until_ready(step_fn.jitted(state, b, jnp.int32(0), sizes, pads=pads))
    compile_s = time.perf_counter() - t0
    cpu = CpuShare()
    recs = []
    for i in range(steps):
        order = rng.permutation(rows)[:batch]
        bi = {"x_num": jnp.asarray(data.x_num[order]), "x_cat": jnp.asarray(data.x_cat[order])}
        sizes = masks.sample_sizes(
            pretrain.rng.numpy_rng(seed, "mask_sizes", i), n_features, mask_cfg
        )
        cpu.start()
        t = time.perf_counter()
        state, metrics = step_fn(state, bi, i)
        jax.block_until_ready((state, metrics))
        recs.append(
            {
                "step_s": time.perf_counter() - t,
                "other_cpu": cpu.stop(),
                "n_ctx": sizes[0],
                "n_trgt": sizes[1],
                "loss": float(metrics["loss"]),
            }
        )
    return {
        "impl": "ours",
        "config": name,
        "batch": batch,
        "buckets": buckets,
        "compiled_pairs": len(pairs),
        "compile_s": compile_s,
        "steps": recs,
    }


SCOPES = ("masks", "target_encoder", "context_encoder", "predictor", "optimizer", "ema")
PARTS = ("attention", "ffn")


def _scope(op_name: str) -> str:
    """'predictor/ffn bwd' for an op of the predictor's FFN backward (pretrain.py's scopes)."""
    parts = set(re.split(r"[/()]", op_name))
    scope = next((p for p in SCOPES if p in parts), "other")
    part = next((p for p in PARTS if p in parts), "")
    direction = "bwd" if "transpose(" in op_name else "fwd"
    return f"{scope}{'/' + part if part else ''} {direction}"


def profile(name: str, sizes: tuple[int, int], buckets: int, steps: int, trace_dir: str) -> dict:
    """Op time per part of one jitted step (jax.profiler trace of `steps` steps at fixed
    mask sizes): {scope: ms per step}, summed over the threads that ran the ops."""
    import glob
    import gzip

    n_features, model_cfg, batch = CONFIGS[name]
    rng = np.random.default_rng(0)
    data = _synthetic(name, n_features, 4 * batch, rng)
    mask_cfg = masks.MaskConfig()
    cfg = pretrain.PretrainConfig(steps=100_000, batch_size=batch, checkpoint_every=0)
    state, step_fn, _ = pretrain.tjepa_setup(data, model_cfg, mask_cfg, cfg, 0)
    b = {"x_num": jnp.asarray(data.x_num[:batch]), "x_cat": jnp.asarray(data.x_cat[:batch])}
    pads = masks.padded_sizes(sizes, n_features, mask_cfg, buckets)
    size_arr = jnp.asarray(sizes, jnp.int32)
    compiled = step_fn.jitted.lower(state, b, jnp.int32(0), size_arr, pads=pads).compile()
    hlo = compiled.as_text()
    op_names = dict(re.findall(r'%([\w.-]+) = [^\n]*?metadata=\{op_name="([^"]*)"', hlo))
    whiles = set(re.findall(r"%([\w.-]+) = [^\n]* while\(", hlo))
    state, _ = jax.block_until_ready(compiled(state, b, jnp.int32(0), size_arr))
    times = []
    with jax.profiler.trace(trace_dir):
        for i in range(steps):
            t = time.perf_counter()
            state, _ = jax.block_until_ready(compiled(state, b, jnp.int32(i + 1), size_arr))
            times.append(time.perf_counter() - t)
    path = sorted(glob.glob(f"{trace_dir}/**/*.trace.json.gz", recursive=True))[-1]
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    per: dict[str, float] = {}
    for e in events:
        op = e.get("args", {}).get("hlo_op")
        if e.get("ph") != "X" or op is None or op in whiles:  # a loop's body ops are its time
            continue
        key = _scope(op_names.get(op, ""))
        per[key] = per.get(key, 0.0) + e["dur"] / 1e3 / steps
    return {"config": name, "pads": pads, "step_ms": 1e3 * float(np.median(times)), "ms": per}


def _synthetic(name: str, n_features: int, rows: int, rng: np.random.Generator) -> TabularData:
    return TabularData(
        name,
        "binary",
        rng.standard_normal((rows, n_features)).astype(np.float32),
        np.zeros((rows, 0), np.int32),
        (),
        rng.integers(0, 2, rows).astype(np.int32),
        tuple(f"x{i}" for i in range(n_features)),
    )


def summarize(res: dict, clean: float) -> dict:
    recs = res["steps"]
    ok = [r for r in recs if r["other_cpu"] < clean]
    use = ok or recs
    step = float(np.median([r["step_s"] for r in use]))
    return {
        "rows_per_s": res["batch"] / step,
        "median_step_s": step,
        "clean_steps": len(ok),
        "steps": len(recs),
        "had_clean": bool(ok),
    }


def _json_lines(cmd: list[str], env: dict | None = None) -> list[dict]:
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def compare(args) -> None:
    """Alternates our step and the official one, each in a fresh process, `--rounds` times."""
    here = pathlib.Path(__file__).resolve().parent
    ours_cmd = [sys.executable, str(here / "benchmark.py"), "--json", "--steps", str(args.steps)]
    ours_cmd += ["--buckets", str(args.buckets)]
    official_cmd = [sys.executable, str(here / "benchmark_official.py"), "--steps", str(args.steps)]
    path = os.pathsep.join(p for p in (args.official, os.environ.get("PYTHONPATH")) if p)
    envs = {"ours": None, "official": {**os.environ, "PYTHONPATH": path}}
    records = []
    for name in args.configs:
        runs: dict[str, list[dict]] = {"ours": [], "official": []}
        for r in range(args.rounds):
            for impl, cmd in (("ours", ours_cmd), ("official", official_cmd)):
                res = _json_lines(cmd + ["--configs", name, "--seed", str(r)], envs[impl])[0]
                runs[impl].append(res)
                print(f"{name} round {r + 1}/{args.rounds}: {impl} done", file=sys.stderr)
        batch = runs["ours"][0]["batch"]
        row = {"config": name, "batch": batch}
        for impl, results in runs.items():
            merged = {"batch": batch, "steps": [s for res in results for s in res["steps"]]}
            row[impl] = summarize(merged, args.clean)
        steps = [s for res in runs["official"] for s in res["steps"]]
        clean = [s for s in steps if s["other_cpu"] < args.clean] or steps
        with_collate = float(np.median([s["step_s"] + s["collate_s"] for s in clean]))
        row["official"]["rows_per_s_with_collate"] = batch / with_collate
        row["ratio"] = row["ours"]["rows_per_s"] / row["official"]["rows_per_s"]
        records.append(row)
        o, f = row["ours"], row["official"]
        print(
            f"{name}: ours {o['rows_per_s']:.1f} rows/s ({o['clean_steps']}/{o['steps']} clean "
            f"steps), official {f['rows_per_s']:.1f} rows/s ({f['clean_steps']}/{f['steps']} "
            f"clean; {f['rows_per_s_with_collate']:.1f} with its mask collation): "
            f"{row['ratio']:.2f}x",
            flush=True,
        )
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(records, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--buckets", type=int, default=pretrain.PretrainConfig.size_buckets)
    parser.add_argument("--clean", type=float, default=0.05, help="max other-process CPU share")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print every step as JSON")
    parser.add_argument("--official", help="checkout of jose-melo/t-jepa: compare in one run")
    parser.add_argument("--rounds", type=int, default=3, help="alternations with --official")
    parser.add_argument("--out", help="with --official: write the summary JSON here")
    parser.add_argument(
        "--profile",
        metavar="N_CTX,N_TRGT",
        help="profile the step at these mask sizes (jax.profiler; op time per part of the step)",
    )
    parser.add_argument("--trace-dir", default="runs/var_jepa_profile", help="with --profile")
    args = parser.parse_args()
    if args.profile:
        sizes = tuple(int(v) for v in args.profile.split(","))
        for name in args.configs:
            res = profile(name, sizes, args.buckets, args.steps, args.trace_dir)
            total = sum(res["ms"].values())
            print(
                f"{name} at sizes {sizes} (padded to {res['pads']}): step {res['step_ms']:.1f} ms "
                f"wall, {total:.1f} ms of op time over all threads"
            )
            for key, ms in sorted(res["ms"].items(), key=lambda kv: -kv[1]):
                print(f"  {key:32s} {ms:7.2f} ms  {ms / total:6.1%}")
        return
    if args.official:
        compare(args)
        return
    print(f"device: {jax.devices()[0].device_kind} x{len(jax.devices())}", flush=True)
    for name in args.configs:
        res = measure(name, args.steps, args.buckets, args.seed)
        s = summarize(res, args.clean)
        if args.json:
            print(json.dumps(res), flush=True)
        print(
            f"{name}: {s['rows_per_s']:.1f} rows/s (median of {s['clean_steps']} clean steps "
            f"of {s['steps']}, other processes < {args.clean:.0%} CPU"
            + ("" if s["had_clean"] else "; NO clean step: median of all steps")
            + f"); {res['compiled_pairs']} bucket pairs compiled in {res['compile_s']:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
