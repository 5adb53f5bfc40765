"""The tables this project reproduces (`python launch/reproduce.py projects/lfpm`).

Table 1 (`table1_full`, `table1_lora`): one run of the cpu config per seed (0, 1, 2) with
finetune = "full" or "lora"; each run holds every (attack, merge, λ, defense) cell, so the table
is rendered from the runs' records.jsonl as mean ± std (ddof = 1) over the seeds. Figures: CTL
error per layer against α (Figure 1) and ASR / mean CA along s for LFPM single vs path (Figure 2).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from projects.lfpm.experiment import CONFIGS, MNIST_TASKS
from shared.results import format_cell
from shared.tables import Claim, Row, Table, md_table

_CPU = CONFIGS["cpu"]
TASK_LABELS = {"mnist": "CA T1 MNIST", "fashion": "CA T2 Fashion", "inv_parity": "CA T3 inv-parity"}
ATTACK_TITLES = {
    "badmerging": "BadMerging (feature interpolation, r ~ U[0.2, 1])",
    "nofi": "Plain poisoning (no feature interpolation)",
    "clean": "No attack (T2 fine-tuned with the frozen head, no poisoning): the clean ASR level",
}
DEFENSE_LABELS = {
    "none": "none",
    "finetune": "fine-tune on D_c",
    "prune": "prune merged τ",
    "negation": "TA negation",
    "lfpm_single": "LFPM single-point (S = 1)",
    "lfpm_path": "LFPM path (S = 8)",
}


def _read_jsonl(path: pathlib.Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def load_records(workdirs: dict, name: str = "records.jsonl") -> list[dict]:
    recs: list[dict] = []
    for _, d in sorted(workdirs.items()):
        recs += _read_jsonl(pathlib.Path(d) / name)
    return recs


def _group(records: list[dict], keys: tuple[str, ...]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in records:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def _cells(recs: list[dict], tasks: list[str]) -> list[str]:
    cols = [f"ca_{t}" for t in tasks] + ["ca_mean", "asr"]
    return [format_cell([r[c] for r in recs], 3) for c in cols]


def render(table: Table, workdirs: dict) -> tuple[str, dict]:
    records = load_records(workdirs)
    tasks = [k[3:] for k in records[0] if k.startswith("ca_") and k != "ca_mean"]
    header = [TASK_LABELS.get(t, f"CA {t}") for t in tasks] + ["CA mean", "ASR (T2)"]
    seeds = sorted({r["seed"] for r in records})
    parts = [f"{len(seeds)} seeds ({', '.join(map(str, seeds))}); fine-tuning: "
             f"{records[0]['finetune']}. ASR: triggered T2 test inputs of true class != "
             "target (0) classified as the target."]  # fmt: skip
    ref = [r for r in records if r["merge"] not in ("ta", "ties")]
    rows = [[r[0]["merge"].replace("individual:", "alone: "),
             "–" if r[0]["attack"] == "-" else r[0]["attack"], *_cells(r, tasks)]
            for r in _group(ref, ("merge", "attack")).values()]  # fmt: skip
    parts.append("## Before merging: θ_0 and each fine-tuned model alone (its own head)\n\n"
                 + md_table(["model", "attack", *header], rows))  # fmt: skip
    merged = [r for r in records if r["merge"] in ("ta", "ties")]
    data = {"records": records}
    for attack, recs in _group(merged, ("attack",)).items():
        rows = []
        for (method, lam, defense), rs in _group(recs, ("merge", "lam", "defense")).items():
            rows.append([method.upper(), f"{lam:g}", DEFENSE_LABELS.get(defense, defense),
                         *_cells(rs, tasks)])  # fmt: skip
        title = ATTACK_TITLES.get(attack[0], attack[0])
        parts.append(f"## {title}\n\n" + md_table(["merge", "λ", "defense", *header], rows))
    return "\n\n".join(parts) + "\n", data


def figure(table: Table, workdirs: dict, out_dir: pathlib.Path) -> list[pathlib.Path]:
    """Figure 1 (CTL error per layer vs α) and Figure 2 (ASR and mean CA along s)."""
    from shared.results import pyplot, save_figure

    plt = pyplot()
    paths = []
    ctls = [json.loads((pathlib.Path(d) / "ctl.json").read_text()) for d in workdirs.values()]
    alphas = ctls[0]["alphas"]
    fig, axes = plt.subplots(1, len(ctls[0]["pairs"]), figsize=(4 * len(ctls[0]["pairs"]), 3.2),
                             squeeze=False)  # fmt: skip
    for ax, pair in zip(axes[0], ctls[0]["pairs"]):
        for layer in ctls[0]["pairs"][pair]:
            vals = np.array([c["pairs"][pair][layer] for c in ctls])
            ax.errorbar(alphas, vals.mean(0), yerr=vals.std(0), label=layer, capsize=2)
        ax.set_title(pair, fontsize=9)
        ax.set_xlabel("α")
    axes[0][0].set_ylabel("relative CTL error")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"{table.name}: ‖f(αθ1+(1−α)θ2) − [αf(θ1)+(1−α)f(θ2)]‖ / ‖f‖", fontsize=9)
    path = out_dir / f"{table.name}_ctl.png"
    save_figure(fig, path)
    plt.close(fig)
    paths.append(path)

    rows = load_records(workdirs, "path.jsonl")
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for d, style in (("lfpm_single", "--"), ("lfpm_path", "-")):
        by_s = _group([r for r in rows if r["defense"] == d], ("s",))
        s = np.array(sorted(k[0] for k in by_s))
        for ax, metric in zip(axes, ("asr", "ca_mean")):
            vals = np.array([[r[metric] for r in by_s[(x,)]] for x in s])
            ax.errorbar(s, vals.mean(1), yerr=vals.std(1), fmt=style, capsize=2,
                        label=DEFENSE_LABELS[d])  # fmt: skip
    for ax, label in zip(axes, ("ASR (T2)", "CA mean")):
        ax.set_xlabel("s in θ_m + s·τ_a")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{table.name}: BadMerging, {_CPU.figure.path_method.upper()} "
                 f"λ = {_CPU.figure.path_lam}", fontsize=9)  # fmt: skip
    path = out_dir / f"{table.name}_path.png"
    save_figure(fig, path)
    plt.close(fig)
    paths.append(path)
    return paths


def _table(finetune: str) -> Table:
    what = "full fine-tuning" if finetune == "full" else (
        f"rank-{_CPU.fine.lora_rank} LoRA on every encoder kernel (PEFT)")  # fmt: skip
    return Table(
        name=f"table1_{finetune}",
        title=f"Table 1 ({what}): CA and ASR of TA / TIES merges of {len(MNIST_TASKS)} tasks "
        "under each defense",
        config="cpu",
        seeds=(0, 1, 2),
        rows=(Row(finetune, "lfpm", (("finetune", finetune),)),),
        sections=(),
        render=render,
        notes=(
            "Defender's knowledge: the trigger is KNOWN (3 x 3 white corner patch), an upper "
            "bound on what trigger inversion would give; the defender holds D_c = 1% of each "
            "task's training draw. Tasks: T1 MNIST, T2 Fashion-MNIST (attacked, target class 0), "
            "T3 intensity-inverted MNIST parity; "
            f"{_CPU.data.train_per_task} training / {_CPU.data.test_per_task} test images per "
            f"task; CNN encoder pretrained label-free (autoencoder, {_CPU.pretrain.steps} steps), "
            f"{_CPU.fine.steps} fine-tuning steps per task; each task keeps its own head, only "
            f"the encoder is merged. Defenses train {_CPU.defense.steps} Adam steps of "
            f"{_CPU.defense.batch_size} D_c inputs per task; pruning zeroes the smallest "
            f"{_CPU.defense.prune_fraction:.0%} of the merged task vector; negation subtracts "
            f"{_CPU.defense.neg_scale:g} x a task vector fine-tuned on triggered D_c inputs "
            "labelled with the target. The LFPM objective is a Reconstruction (README).",
        ),
    )


TABLES = {"table1_full": _table("full"), "table1_lora": _table("lora")}
FIGURES = {name: figure for name in TABLES}

# From table1_full and table1_lora (3 seeds each) at revision 6ffa200 and their figures.
CLAIMS = (
    Claim(
        "BadMerging keeps a high ASR after merging, and training the backdoor without feature "
        "interpolation gives a weaker attack.",
        "holds",
        "Undefended BadMerging merges: full FT ASR 0.72 (TA λ = 0.3), 0.49 (TIES 0.3) and "
        "0.93-1.00 at λ >= 0.5; LoRA 0.91-1.00 everywhere. Plain poisoning: 0.26 / 0.56 / 0.86 / "
        "0.96 over TA λ = 0.3-1 (full), 0.25-0.98 (LoRA); clean level 0.01-0.03.",
    ),
    Claim(
        "Defenses that edit parameters directly via task arithmetic either leave the backdoor or "
        "hurt clean accuracy.",
        "holds",
        "Pruning the merged task vector leaves ASR at 0.46-1.00; fine-tuning on D_c leaves "
        "0.33-0.35 at λ = 0.3 and 0.78-1.00 above (full FT), 0.89-1.00 (LoRA); TA negation "
        "removes it (ASR <= 0.17) but costs 0.12-0.38 mean CA and leaves T2 at 0.13-0.32.",
    ),
    Claim(
        "LFPM drives ASR to the clean level with a small clean-accuracy cost, for full "
        "fine-tuning and for PEFT (LoRA).",
        "partly",
        "Full FT: LFPM path ASR 0.024-0.036 on all 8 merges (clean level 0.01-0.03) with mean "
        "CA from -0.02 to +0.12 against the undefended merge (its D_c cross-entropy also "
        "fine-tunes), T2's own CA 0.01-0.11 lower. LoRA: ASR 0.03-0.10 up to λ = 0.7 but "
        "0.15-0.17 at λ = 1, at mean CA -0.09 to +0.06. The defender knows the trigger.",
    ),
    Claim(
        "The path-integral objective keeps the backdoor suppressed along the whole path "
        "θ_m + s·τ_a, where the single-point version can fail at intermediate s.",
        "holds",
        "Figure 2 (TA λ = 0.5): at s = 0.4 ASR 0.16 (path) vs 0.77 (single-point) under full FT, "
        "0.19 vs 0.94 under LoRA; at s = 1 the single-point ASR stays 0.08-0.24 across merges "
        "where the path version reaches 0.02-0.04 (full).",
    ),
    Claim(
        "Features are approximately linear across fine-tuned tasks (CTL), so merging acts as "
        "feature averaging.",
        "partly",
        "Figure 1 (full FT, α = 0.5): relative CTL error <= 0.01 at the first convolution, "
        "0.10-0.14 at the second and 0.13-0.24 at the 64-d output: linear early, less so deep.",
    ),
)
