"""The stability plot: global gradient norm against step for every finetuning variant."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.results import pyplot, save_figure

LABELS = {
    "dot_product": "BF16 (full-precision attention)",
    "bf16": "BF16 (FP4 kernel, quantization off)",
    "drop_in_qat": "drop-in QAT",
    "attn_qat": "Attn-QAT",
    "only_o_prime": "only D from O'",
    "only_quantized_p": "only fq(P) in dV",
}


def finetune_norms(workdir: pathlib.Path) -> dict[str, np.ndarray]:
    """{variant: per-step gradient norms} of every finetuning phase logged in a run."""
    by_phase: dict[str, dict[int, float]] = {}
    path = workdir / "metrics.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        r = json.loads(line)
        phase = r.get("phase", "")
        if phase.startswith("finetune_") and "grad_norm" in r:
            by_phase.setdefault(phase.removeprefix("finetune_"), {})[r["step"]] = r["grad_norm"]
    return {v: np.asarray([s[k] for k in sorted(s)]) for v, s in by_phase.items()}


def grad_norm_figure(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """One line per variant (mean over seeds), each seed faint; log-scale norm axis."""
    runs: dict[str, list[np.ndarray]] = {}
    for workdir in workdirs.values():
        for variant, norms in finetune_norms(workdir).items():
            runs.setdefault(variant, []).append(norms)
    if not runs:
        return []
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (variant, seeds) in enumerate(sorted(runs.items())):
        n = min(len(s) for s in seeds)
        color = f"C{i}"
        for s in seeds:
            ax.plot(np.arange(1, n + 1), s[:n], color=color, alpha=0.2, lw=0.8)
        mean = np.mean([s[:n] for s in seeds], axis=0)
        ax.plot(np.arange(1, n + 1), mean, color=color, lw=1.6, label=LABELS.get(variant, variant))
    ax.set_yscale("log")
    ax.set_xlabel("finetuning step")
    ax.set_ylabel("global gradient norm (before clipping)")
    ax.set_title(f"table {table.name}: mean of {len(table.seeds)} seeds (faint: each seed)")
    ax.legend(fontsize=8)
    path = out_dir / f"{table.name}_grad_norm.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]


def fp4_gap_summary(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Paired FP4 penalty per row: FP4-inference loss minus full-precision loss of the same
    weights on the same windows, mean ± std over the seeds that measured it."""
    from shared.results import format_cell

    gaps: dict[str, list[float]] = {}
    for workdir in workdirs.values():
        path = workdir / "results.json"
        metrics = json.loads(path.read_text()) if path.exists() else {}
        for row in table.rows:
            full, fp4 = (
                metrics.get(f"{row.prefix}/full_loss"),
                metrics.get(f"{row.prefix}/fp4_loss"),
            )
            if full is not None and fp4 is not None:
                gaps.setdefault(row.label, []).append(fp4 - full)
    lines = [
        f"# {table.title}: FP4 penalty",
        "",
        "Held-out loss under FP4 attention minus the loss of the same weights under "
        "full-precision attention (nats per token, paired on the same windows; lower is "
        "better), mean ± std over seeds.",
        "",
        "| | FP4 − full-precision loss | seeds |",
        "|---|---|---|",
    ]
    for row in table.rows:
        if row.label in gaps:
            vals = gaps[row.label]
            lines.append(f"| {row.label} | {format_cell(vals, 4)} | {len(vals)} |")
    path = out_dir / f"{table.name}_fp4_gap.md"
    path.write_text("\n".join(lines) + "\n")
    return [path]


def after_table(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Everything written after a table: the gradient-norm figure and the paired FP4 penalty."""
    return grad_norm_figure(table, workdirs, out_dir) + fp4_gap_summary(table, workdirs, out_dir)


# Modes in the gradient-fidelity figure: (label, line style). fp4_ptq is left out: its gradient
# is drop-in QAT's by definition (kernels_pallas.fp4_attention). Attn-QAT shares dQ, dK with
# "only D from O'" and dV with "only fq(P) in dV" (each fix touches one path), so it is drawn
# wide and faint underneath, the ablations dashed on top.
FIDELITY_MODES = {
    "bf16": ("bf16 (quantization off)", {"lw": 1.4}),
    "drop_in_qat": ("drop-in QAT (= FP4 PTQ's gradient)", {"lw": 1.4}),
    "attn_qat": ("Attn-QAT", {"lw": 4.0, "alpha": 0.45}),
    "only_o_prime": ("only D from O'", {"lw": 1.2, "ls": "--"}),
    "only_quantized_p": ("only fq(P) in dV", {"lw": 1.2, "ls": "--"}),
}


def fidelity_figure(table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """1 − cosine of dQ, dK, dV against float64 attention vs sequence length: one panel per
    (input distribution, tensor), mean over seeds with min–max bars, log-log axes."""
    from projects.attn_qat.grad_fidelity import DISTRIBUTIONS, TENSORS, metric_key

    runs = []
    for workdir in workdirs.values():
        path = workdir / "results.json"
        runs += [json.loads(path.read_text())] if path.exists() else []
    keys = [k for r in runs for k in r]
    dists = [d for d in DISTRIBUTIONS if any(k.split("/")[1].startswith(f"{d}_") for k in keys)]
    lengths = sorted({int(k.rsplit("_L", 1)[1]) for k in keys})
    if not runs or not lengths:
        return []
    plt = pyplot()
    fig, axes = plt.subplots(
        len(dists), len(TENSORS), figsize=(11, 3.3 * len(dists)), sharex=True, squeeze=False
    )
    for row, dist in enumerate(dists):
        for col, tensor in enumerate(TENSORS):
            ax = axes[row][col]
            for i, (mode, (label, style)) in enumerate(FIDELITY_MODES.items()):
                err = np.array(
                    [[1.0 - r.get(metric_key(mode, dist, tensor, n), np.nan) for n in lengths]
                     for r in runs]
                )  # fmt: skip
                if np.isnan(err).all():
                    continue
                mean = np.nanmean(err, axis=0)
                bars = [mean - np.nanmin(err, axis=0), np.nanmax(err, axis=0) - mean]
                ax.errorbar(lengths, mean, yerr=bars, color=f"C{i}", marker="o", ms=3,
                            capsize=2, label=label, **style)  # fmt: skip
            ax.set_xscale("log", base=2)
            ax.set_xticks(lengths, [str(n) for n in lengths])
            ax.set_yscale("log")
            ax.set_title(f"d{tensor[1:].upper()}, {dist} inputs", fontsize=9)
            ax.set_xlabel("sequence length" if row == len(dists) - 1 else "")
            ax.set_ylabel("1 − cosine vs float64" if col == 0 else "")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"table {table.name}: mean of {len(runs)} seeds (bars: min–max)", fontsize=10)
    path = out_dir / f"{table.name}.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]
