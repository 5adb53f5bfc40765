"""The tables this project reproduces (`python launch/reproduce.py projects/lost_in_attention`).

Table `toy`: one run per seed trains the toy VLM and measures it (accuracy.json, geometry.jsonl).
Table 1 cells are mean ± std (ddof = 1) over seeds x noise draws; the geometry cells are
mean ± std over the measured samples of all seeds pooled (the spec's Figure 1 band).
Table `smollm2`: SmolLM2-135M-Instruct on Wikipedia leads, forward passes only, one run.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from projects.lost_in_attention import geometry
from projects.lost_in_attention.experiment import CONFIGS
from projects.lost_in_attention.questions import QTYPES
from projects.lost_in_attention.text_model import TEXT_MODES
from shared.results import format_cell
from shared.tables import Claim, Row, Table, md_table

_CPU, _SMOL = CONFIGS["cpu"], CONFIGS["smollm2"]
MODE_LABELS = {
    "vanilla": "vanilla (learned attention)",
    "noise_all": "noise attention, all layers",
    "noise_late": "noise attention, late layers",
    "uniform": "uniform causal attention, all layers",
    "text_to_image": "noise on text→image entries only",
}
FIGURE_METRICS = (("rho", "ρ (in-span energy)"), ("delta_erank", "ΔeRank"),
                  ("norm_ratio", "‖ΔX‖ / ‖X‖"))  # fmt: skip
GEOMETRY_COLUMNS = ("rho", "rho_chance", "delta_erank", "norm_ratio", "overlap", "k", "rho_c",
                    "delta_erank_c")  # fmt: skip


def _run_config(workdirs: dict) -> dict:
    return json.loads((sorted(workdirs.items())[0][1] / "config.json").read_text())


def _records(workdirs: dict, skip: int | None = None) -> list[dict]:
    out = []
    for _, d in sorted(workdirs.items()):
        for line in (d / "geometry.jsonl").read_text().splitlines():
            r = json.loads(line)
            if skip is None or r.get("skip", 0) == skip:
                out.append(r)
    return out


def layer_stats(records: list[dict]) -> dict[str, dict[str, list[list[float]]]]:
    """sublayer -> metric -> per layer, the values of every record (non-finite dropped)."""
    # ρ of an update in a uniformly random direction: k / d
    chance = ({**r, "rho_chance": r["k"] / r["dim"]} for r in records)
    return geometry.per_layer(chance, GEOMETRY_COLUMNS)


def _geometry_section(stats: dict, what: str) -> str:
    header = ["layer"] + [f"{sub} {m}" for m in ("rho", "delta_erank", "norm_ratio")
                          for sub in ("attn", "ffn")]  # fmt: skip
    nl = len(stats["attn"]["rho"])
    rows = [[i] + [format_cell(stats[sub][m][i], 3) for m in ("rho", "delta_erank", "norm_ratio")
                   for sub in ("attn", "ffn")] for i in range(nl)]  # fmt: skip
    means = {(s, m): [float(np.mean(v)) for v in stats[s][m]] for s in stats for m in stats[s]}
    above = sum(a > f for a, f in zip(means["attn", "rho"], means["ffn", "rho"]))
    neg = sum(d <= 0 for d in means["attn", "delta_erank"])
    pos = sum(d > 0 for d in means["ffn", "delta_erank"])
    summary = md_table(
        ["over layers", "attn", "ffn"],
        [[m, f"{np.mean(means['attn', m]):.3f}", f"{np.mean(means['ffn', m]):.3f}"]
         for m in GEOMETRY_COLUMNS],
    )  # fmt: skip
    return (
        f"## Figure 1 data: residual-update geometry per layer, {what}\n\n"
        "Measured on the residual stream before each sublayer's norm: attention X = the block "
        "input, FFN X = the stream after the attention update; mean ± std over samples.\n\n"
        + md_table(header, rows)
        + f"\n\nAttention ρ above FFN ρ in {above} of {nl} layers; attention ΔeRank ≤ 0 in "
        f"{neg} of {nl}; FFN ΔeRank > 0 in {pos} of {nl}.\n\nMeans over layers (rho_c, "
        "delta_erank_c: row-centred X and ΔX; rho_chance: k / d, the ρ of a random direction; "
        "overlap: mean cos² of the principal angles between the 99%-energy subspaces of X and "
        "ΔX; k: X's 99%-energy dimension):\n\n" + summary
    )


def render_toy(table: Table, workdirs: dict) -> tuple[str, dict]:
    accs = [json.loads((d / "accuracy.json").read_text()) for _, d in sorted(workdirs.items())]
    rows, data = [], {"accuracy": {}, "majority": {}}
    for mode, label in MODE_LABELS.items():
        draws = [draw for a in accs for draw in a["accuracy"][mode]]
        cells = {q: [100 * d[q] for d in draws] for q in QTYPES}
        cells["all"] = [100 * np.mean([d[q] for q in QTYPES]) for d in draws]
        data["accuracy"][mode] = {q: [float(v) for v in cells[q]] for q in cells}
        rows.append([label] + [format_cell(cells[q], 1) for q in (*QTYPES, "all")]
                    + [str(len(draws))])  # fmt: skip
    maj = {q: [100 * a["majority"][q] for a in accs] for q in QTYPES}
    data["majority"] = maj
    rows.append(["majority answer (baseline)"] + [format_cell(maj[q], 1) for q in QTYPES]
                + [format_cell([np.mean([maj[q][i] for q in QTYPES]) for i in range(len(accs))],
                               1), str(len(accs))])  # fmt: skip
    md = "## Table 1: answer accuracy (%) per question type, toy VLM on MNIST\n\n" + md_table(
        ["attention", *QTYPES, "all", "runs (seeds × draws)"], rows
    )
    stats = layer_stats(_records(workdirs))
    data["geometry"] = _stat_json(stats)
    n = _run_config(workdirs)["eval"]["geometry_samples"]
    md += "\n\n" + _geometry_section(stats, f"toy VLM, {n} test items x {len(workdirs)} seeds")
    return md + "\n", data


def _stat_json(stats: dict) -> dict:
    return {s: {m: [[float(np.mean(v)), float(np.std(v, ddof=1))] if len(v) > 1 else None
                    for v in per] for m, per in ms.items()} for s, ms in stats.items()}  # fmt: skip


def render_smollm2(table: Table, workdirs: dict) -> tuple[str, dict]:
    (d,) = workdirs.values()
    acc = json.loads((d / "accuracy.json").read_text())["text"]
    labels = {"noise_late": f"noise attention, layers ≥ {_SMOL.text.late_from}"}
    rows = [[labels.get(m, MODE_LABELS[m]), format_cell([100 * x["top1"] for x in acc[m]], 1),
             format_cell([x["nll"] for x in acc[m]], 3), len(acc[m])]
            for m in TEXT_MODES]  # fmt: skip
    md = ("## Next-token prediction on Wikipedia leads under attention replacement\n\n"
          + md_table(["attention", "top-1 (%)", "NLL (nats)", "noise draws"], rows))  # fmt: skip
    data = {"text": acc}
    for skip, what in ((0, "every token"), (1, "without the first token (attention sink)")):
        stats = layer_stats(_records(workdirs, skip))
        data[f"geometry_skip{skip}"] = _stat_json(stats)
        text = _run_config(workdirs)["text"]
        md += "\n\n" + _geometry_section(
            stats, f"SmolLM2-135M, {text['documents']} leads x {text['tokens']} tokens, {what}"
        )
    return md + "\n", data


def _figure(table: Table, workdirs: dict, out_dir: pathlib.Path, skip, title) -> pathlib.Path:
    from shared.results import pyplot, save_figure

    plt = pyplot()
    stats = layer_stats(_records(workdirs, skip))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, (m, label) in zip(axes, FIGURE_METRICS):
        for j, sub in enumerate(("attn", "ffn")):
            per = stats[sub][m]
            mean = np.array([np.mean(v) for v in per])
            sd = np.array([np.std(v) for v in per])
            x = np.arange(len(per))
            ax.plot(x, mean, "o-", ms=3, color=f"C{j}", label="attention" if j == 0 else "FFN")
            ax.fill_between(x, mean - sd, mean + sd, color=f"C{j}", alpha=0.2)
        ax.set_xlabel("layer")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_title(label, fontsize=9)
        if m == "delta_erank":
            ax.axhline(0, color="grey", lw=0.5)
        if m == "norm_ratio":  # spans orders of magnitude in SmolLM2
            ax.set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(title + " (residual stream before the sublayer norm; mean ± sd over samples)",
                 fontsize=9)  # fmt: skip
    path = out_dir / f"{table.name}_geometry{'' if not skip else '_skip1'}.png"
    save_figure(fig, path)
    plt.close(fig)
    return path


def toy_figures(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    title = f"Toy VLM on MNIST questions, {len(workdirs)} seeds"
    return [_figure(table, workdirs, out_dir, None, title)]


def smollm2_figures(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    return [_figure(table, workdirs, out_dir, s, f"SmolLM2-135M on Wikipedia leads, skip {s}")
            for s in (0, 1)]  # fmt: skip


TOY = Table(
    name="toy",
    title="Toy VLM: attention replacement accuracy and residual-update geometry",
    config="cpu",
    seeds=(0, 1, 2),
    rows=(Row("toy VLM", "toy"),),
    sections=(),
    render=render_toy,
    notes=(
        f"Toy VLM: {_CPU.model.num_layers}-layer pre-norm LLaMA decoder, d = {_CPU.model.dim}, "
        f"{_CPU.model.num_heads} heads; 49 visual tokens (4x4 MNIST patches) + 4 question "
        f"tokens, loss on the answer token only; AdamW {_CPU.train.lr}, {_CPU.train.steps} "
        f"steps of {_CPU.train.batch_size} (sized for the 15-minute table budget). Accuracy on "
        f"{_CPU.eval.images_per_type} test images per question type; stochastic modes "
        f"{_CPU.eval.noise_draws} noise draws each, late layers = layers ≥ "
        f"{_CPU.eval.late_from}. Replacement is at inference only (Reconstruction of the "
        "paper's protocol, see README).",
    ),
)
SMOLLM2 = Table(
    name="smollm2",
    title="SmolLM2-135M on Wikipedia leads: residual-update geometry and attention replacement",
    config="smollm2",
    seeds=(0,),
    rows=(Row("SmolLM2-135M", "smollm2"),),
    sections=(),
    render=render_smollm2,
    notes=(
        "SmolLM2-135M-Instruct (GGUF Q4_1 dequantized to float32), forward passes only, no "
        f"chat template; the first {_SMOL.text.documents} Wikipedia leads with at least "
        f"{_SMOL.text.tokens} tokens, their first {_SMOL.text.tokens} tokens. Top-1 / NLL of "
        f"every next token; noise modes {_SMOL.text.noise_draws} draws. One run "
        "(deterministic model).",
    ),
)
TABLES = {"toy": TOY, "smollm2": SMOLLM2}
FIGURES = {"toy": toy_figures, "smollm2": smollm2_figures}

# The paper's claims and what tables toy and smollm2 (both generated at 7895d52) show.
CLAIMS = (
    Claim(
        "Attention updates stay inside the residual stream's subspace while FFN updates expand "
        "it (attention ρ near 1 and ΔeRank <= 0; FFN lower ρ and ΔeRank > 0).",
        "does not hold",
        "toy, Figure 1 data: attention ρ below FFN ρ in 4 of 4 layers (0.470 vs 0.569); ΔeRank "
        "<= 0 for attention in 3 of 4 layers but also for the FFN in 4 of 4; smollm2: attention "
        "ρ 0.118 vs FFN 0.241 (above it in 8 of 30 layers), ΔeRank > 0 for the FFN in 26 of 30 "
        "layers and for attention in 29 of 30; the same ordering without the first token and "
        "with row-centred X",
    ),
    Claim(
        "Replacing learned attention by predefined values (e.g. Gaussian noise) gives comparable "
        "results.",
        "does not hold",
        "toy, Table 1: noise / uniform attention in every layer 41.7 ± 1.8% / 41.6 ± 2.6% vs "
        "vanilla 82.4 ± 4.8% (majority answer 46.9%); late layers only 75.2 ± 6.0%; "
        "text→image only 55.0 ± 5.2%; smollm2: next-token top-1 40.6% -> 26.1% (noise in "
        "layers >= 20) and 4.4% (all layers); the paper's 7B LVLMs on VQA are not run here",
    ),
)
