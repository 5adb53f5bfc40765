"""Per-layer geometry of the attention and FFN updates of a decoder, from `shared.interp`
captures: for each sample, X = the residual stream entering the sublayer (before its norm) and
ΔX = the update it adds back, measured with shared.metrics.residual_geometry.

  attention: X = resid_pre[l],  ΔX = attn_out[l]
  FFN:       X = resid_mid[l],  ΔX = ffn_out[l]
Each (sample, layer, sublayer) gives one record; the centred variants (ρ and ΔeRank on
row-centred X) are the spec's robustness check.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from threadpoolctl import threadpool_limits

from shared.metrics.residual_geometry import update_geometry

CAPTURE = ("resid_pre", "attn_out", "resid_mid", "ffn_out")
SUBLAYERS = {"attn": ("resid_pre", "attn_out"), "ffn": ("resid_mid", "ffn_out")}
METRICS = ("rho", "delta_erank", "overlap", "norm_ratio", "cosine", "k", "rho_c", "delta_erank_c")


def measure(acts: dict[str, np.ndarray], skip: int = 0) -> list[dict]:
    """acts: name -> [L, B, T, D] -> one record per (sample, layer, sublayer); the first `skip`
    tokens of every sample are left out."""
    acts = {k: np.asarray(acts[k], np.float64)[:, :, skip:] for k in CAPTURE}
    num_layers, batch, _, dim = acts["resid_pre"].shape
    # thousands of small SVDs: two BLAS threads cost more than they give (measured 13 -> 9 ms
    # per 64 x 576 pair on 2 cores)
    with threadpool_limits(1):
        return [
            {"sample": b, "layer": layer, "sublayer": sub, "dim": dim,
             **update_geometry(acts[xs][layer, b], acts[dxs][layer, b], center=True)}
            for b in range(batch) for layer in range(num_layers)
            for sub, (xs, dxs) in SUBLAYERS.items()
        ]  # fmt: skip


def per_layer(records: Iterable[dict], metrics=METRICS) -> dict[str, dict[str, list[list]]]:
    """sublayer -> metric -> per layer, the finite values of the records, in record order."""
    records = list(records)
    num_layers = 1 + max(r["layer"] for r in records)
    out = {sub: {m: [[] for _ in range(num_layers)] for m in metrics} for sub in SUBLAYERS}
    for r in records:
        for m in metrics:
            if np.isfinite(r[m]):
                out[r["sublayer"]][m][r["layer"]].append(r[m])
    return out


def summarize(records: Iterable[dict]) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """sublayer -> metric -> [(mean, sd over samples) per layer]."""
    nan = (float("nan"), float("nan"))
    return {sub: {m: [(float(np.mean(v)), float(np.std(v, ddof=1))) if len(v) > 1 else nan
                      for v in layers] for m, layers in ms.items()}
            for sub, ms in per_layer(records).items()}  # fmt: skip


def flat_means(summary: dict, prefix: str = "geometry") -> dict[str, float]:
    """{'geometry/attn/rho/L0': mean, ...} and the mean over layers per (sublayer, metric)."""
    out = {}
    for sub, metrics in summary.items():
        for m, per_layer in metrics.items():
            for layer, (mean, _) in enumerate(per_layer):
                out[f"{prefix}/{sub}/{m}/L{layer}"] = mean
            out[f"{prefix}/{sub}/{m}/mean"] = float(np.nanmean([v for v, _ in per_layer]))
    return out
