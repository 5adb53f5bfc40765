"""The tables this project reproduces (`python launch/reproduce.py projects/var_sr`).

Both tables and the figure are rendered from one run of the cpu config, which holds its seeds
(cfg.seeds: 0, 1, 2 vary the crops, the initialisations and the training), so every cell is the
mean ± std (ddof = 1) over those three seeds.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from projects.var_sr.experiment import CONFIGS
from shared.results import format_cell
from shared.tables import Claim, Row, Table, md_table

_CPU = CONFIGS["cpu"]


def _load(workdirs: dict, name: str) -> list[dict]:
    (d,) = workdirs.values()
    return [json.loads(x) for x in (d / f"{name}.jsonl").read_text().splitlines() if x]


def describe(system: str) -> str:
    if system == "bicubic":
        return "bicubic"
    if system == "var_sr":
        return "VAR-SR (standard RQ, CE)"
    if system == "hit":
        return "+ HIT (CE)"
    _, _, b, lam = system.split("_")
    return f"+ HIT + DPO (β = {b[1:]}, λ = {lam[1:]})"


def render_table1(table: Table, workdirs: dict) -> tuple[str, dict]:
    recs = _load(workdirs, "systems")
    rows = []
    for s in dict.fromkeys(r["system"] for r in recs):
        rs = [r for r in recs if r["system"] == s]
        rows.append([describe(s)] + [format_cell([r[scale][m] for r in rs], 2 if "psnr" in m
                                                 else 3)
                                     for scale in ("x2", "x4")
                                     for m in ("psnr", "ssim", "psnr_y", "ssim_y")])  # fmt: skip
    header = ["system"] + [f"{s} {m}" for s in ("×2", "×4")
                           for m in ("PSNR", "SSIM", "PSNR-Y", "SSIM-Y")]  # fmt: skip
    seeds = sorted({r["seed"] for r in recs})
    md = (f"Test: {len(_CPU.data.test_images)} held-out photographs "
          f"({', '.join(_CPU.data.test_images)}), {_CPU.data.test_per_image} fixed 32 x 32 crops "
          f"each; seeds {seeds}.\n\n" + md_table(header, rows))  # fmt: skip
    return md + "\n", {"records": recs}


def render_table2(table: Table, workdirs: dict) -> tuple[str, dict]:
    recs = _load(workdirs, "tokenizers")
    sides = list(recs[0]["prefix_psnr"])
    rows = []
    for v in ("standard", "hit"):
        rs = [r for r in recs if r["tokenizer"] == v]
        rows.append([{"standard": "standard RQ (VAR)", "hit": "HIT"}[v]]
                    + [format_cell([r["prefix_psnr"][p] for r in rs], 2) for p in sides]
                    + [format_cell([r["overlap"] for r in rs], 3)])  # fmt: skip
    header = (["tokenizer"] + [f"prefix ≤ {p}x{p} → {4 * int(p)}px PSNR" for p in sides]
              + ["token overlap (HR prefix = LR tokens)"])  # fmt: skip
    return md_table(header, rows) + "\n", {"records": recs}


def figure(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """log pi(y_w) - log pi(y_l) over training (mean over seeds), with and without DPO."""
    from shared.results import pyplot, save_figure

    plt = pyplot()
    recs = _load(workdirs, "margins")
    fig, ax = plt.subplots(figsize=(6, 3.8))
    for i, s in enumerate(dict.fromkeys(r["system"] for r in recs)):
        steps = sorted({r["step"] for r in recs if r["system"] == s})
        mean = [np.mean([r["margin"] for r in recs if r["system"] == s and r["step"] == t])
                for t in steps]  # fmt: skip
        ax.plot(steps, mean, lw=1, color=f"C{i}", label=describe(s))
    ax.axvline(_CPU.transformer.steps, color="grey", lw=0.5, ls="--")
    ax.set_xlabel("training step (dashed: DPO / CE continuation starts)")
    ax.set_ylabel("log π(y_w) − log π(y_l)")
    ax.legend(fontsize=7)
    path = out_dir / f"{table.name}_margin.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]


_ROW = (Row("cpu", "var_sr"),)
_NOTES = (
    f"HR {_CPU.data.hr_size} x {_CPU.data.hr_size} crops, LR = antialiased bicubic x"
    f"{_CPU.data.scale} + noise σ = {_CPU.data.noise}; tokenizer: conv VQ-VAE to 8 x 8 x "
    f"{_CPU.tokenizer.dim}, V = {_CPU.tokenizer.vocab}, scales {_CPU.data.patch_nums}, "
    f"{_CPU.tokenizer.steps} steps; HIT: prefix-decode losses, token-overlap cross-entropy "
    f"weight {_CPU.tokenizer.overlap} (README: it diverged at 1 and 0.1); transformer: "
    f"{_CPU.transformer.depth} layers, d = "
    f"{_CPU.transformer.dim}, {_CPU.transformer.steps} CE steps, then {_CPU.dpo.steps} steps of "
    "CE alone or CE + DPO. ×2 = the prefix decode of scales ≤ 4 x 4 against the HR crop "
    "area-downsampled by 2; ×4 = the full decode against the HR crop; Y: BT.601 luma with a "
    "border crop of the scale. HIT and the DPO term are Reconstructions (README).",
)

TABLES = {
    "table1": Table(name="table1", title="Super-resolution: PSNR and SSIM at ×2 and ×4",
                    config="cpu", seeds=(0,), rows=_ROW, sections=(), render=render_table1,
                    notes=_NOTES),  # fmt: skip
    "table2": Table(name="table2", title="Tokenizer: prefix reconstructions and token overlap",
                    config="cpu", seeds=(0,), rows=_ROW, sections=(), render=render_table2,
                    notes=_NOTES),  # fmt: skip
}
FIGURES = {"table1": figure}

CLAIMS = (
    Claim(
        "HIT's prefixes decode to usable lower-resolution images (multi-scale outputs in one "
        "pass), unlike standard RQ prefixes.",
        "partly",
        "table2: HIT's coarse prefixes decode better than standard RQ's (4 px: 19.08 ± 0.09 vs "
        "17.07 ± 0.85 dB; 8 px: 23.08 ± 0.57 vs 21.67 ± 0.91; 16 px: 24.70 ± 0.16 vs 24.20 ± "
        "0.69) at a cost in the full decode (25.09 ± 0.02 vs 25.94 ± 0.46). The gap is 0.5-2 dB, "
        "not the large one of the paper: standard RQ prefixes are already fair images here.",
    ),
    Claim(
        "HIT enforces token overlap across scales (the HR tokenization's prefix equals the LR "
        "tokenization).",
        "does not hold",
        "The token-overlap cross-entropy (Reconstruction) diverged at weight 1 and 0.1 (README); "
        "without it (the table's HIT) the overlap rate is 0.379 ± 0.049 against 0.309 ± 0.024 "
        "for standard RQ (table2).",
    ),
    Claim(
        "The DPO regularizer raises the model's preference for HR over LR tokens and improves "
        "SR quality.",
        "partly",
        "table1_margin.png: every DPO run raises log π(y_w) − log π(y_l) above the CE "
        "continuation, most at λ = 1. table1: SR quality does not improve; ×4 PSNR falls from "
        "18.19 ± 0.90 (HIT, CE) to 16.59-18.05 dB, more with larger λ and β.",
    ),
    Claim(
        "A ~300M VAR with HIT reaches state-of-the-art SR without external data.",
        "not testable here",
        "Paper-scale model and benchmarks are out of reach on CPU; at this scale every VQ-based "
        "system is far below bicubic (×4 PSNR 19.67 ± 0.23 for VAR-SR against 30.25; table1).",
    ),
)
