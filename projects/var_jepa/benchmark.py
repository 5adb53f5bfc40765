"""T-JEPA pretraining throughput, to compare with the official PyTorch code on the same machine.

    python projects/var_jepa/benchmark.py [--repeats 5] [--steps 20]

One step = target forward, context forward, predictor, loss, backward, optimizer, EMA (the
jitted `train_tjepa` step). Configs from the Var-JEPA spec: "small" (14 numerical features,
hidden 64, 4+4 layers, batch 256; official: ~480-500 rows/s on a 2-core CPU) and "jannis"
(54 features, 16+16 layers, batch 512; official: ~29 rows/s). Prints rows/s after compilation
as the median over repeats.
"""

from __future__ import annotations

import argparse
import time

import jax
import numpy as np

from projects.var_jepa import experiment, masks, pretrain
from projects.var_jepa.tjepa_model import ModelConfig
from shared.data.tabular import TabularData

CONFIGS = {
    "small": (
        14,
        ModelConfig(
            hidden_dim=64,
            num_layers=4,
            num_heads=2,
            ff_dim=64,
            dropout=0.0,
            pred_dim=16,
            pred_layers=4,
            pred_heads=4,
            pred_ff_dim=256,
        ),
        256,
    ),
    "jannis": (54, experiment.CONFIGS["paper"].model, 512),
}


def measure(name: str, steps: int, repeats: int) -> list[float]:
    n_features, model_cfg, batch = CONFIGS[name]
    rng = np.random.default_rng(0)
    rows = 4 * batch
    data = TabularData(
        name,
        "binary",
        rng.standard_normal((rows, n_features)).astype(np.float32),
        np.zeros((rows, 0), np.int32),
        (),
        rng.integers(0, 2, rows).astype(np.int32),
        tuple(f"x{i}" for i in range(n_features)),
    )
    rates = []
    timings: list[float] = []
    orig = pretrain.train_loop

    def timed_loop(**kw):
        fn = kw["step_fn"]

        def step(state, b, i):
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(state, b, i))
            timings.append(time.perf_counter() - t0)
            return out

        return orig(**{**kw, "step_fn": step})

    pretrain.train_loop = timed_loop
    try:
        for _ in range(repeats):
            timings.clear()
            cfg = pretrain.PretrainConfig(steps=steps + 1, batch_size=batch, checkpoint_every=0)
            pretrain.train_tjepa(data, model_cfg, masks.MaskConfig(), cfg, 0, None)
            rates.append(batch / float(np.median(timings[1:])))  # step 0 includes compilation
    finally:
        pretrain.train_loop = orig
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    official = {"small": 490.0, "jannis": 29.0}  # the spec's 2-core PyTorch figures
    print(f"device: {jax.devices()[0].device_kind} x{len(jax.devices())}")
    for name in args.configs:
        rates = measure(name, args.steps, args.repeats)
        med = float(np.median(rates))
        print(
            f"{name} (dropout {CONFIGS[name][1].dropout}): median {med:.0f} rows/s over "
            f"{len(rates)} repeats (min {min(rates):.0f}, max {max(rates):.0f}); "
            f"{med / official[name]:.2f}x the official PyTorch code's ~{official[name]:.0f} "
            "rows/s on a 2-core CPU (the spec's figure, not measured here)"
        )


if __name__ == "__main__":
    main()
