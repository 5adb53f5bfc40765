"""The tables of PRM-BiasBench (`python launch/reproduce.py projects/prm_biasbench`).

Each table runs one tier (`tiers` override) for 3 seeds; every run trains its PRMs afresh.
Cells are mean ± std over the seeds (format of shared/results.py); the tables are rendered from
the runs' results.json (`render`), since a cell's key names the PRM and the perturbation type.
"""

from __future__ import annotations

import json
import pathlib

from projects.prm_biasbench.perturbations import LOGIC, STYLE
from shared.results import render_table
from shared.tables import Claim, Row, Table

SEEDS = (0, 1, 2)
PRM_LABELS = {"decoder": "decoder PRM (trained here)", "minilm": "MiniLM-L6 PRM (fine-tuned)"}


def _runs(workdirs: dict) -> list[dict]:
    return [json.loads((w / "results.json").read_text()) for w in workdirs.values()]


def _cells(runs: list[dict], keys: dict[tuple[str, str], str]) -> dict:
    """{(row, column): [value per seed]} for the metric key of each cell."""
    return {cell: [r[k] for r in runs if k in r] for cell, k in keys.items()}


def _prms(runs: list[dict], tier: str) -> list[str]:
    return [p for p in PRM_LABELS if any(k.startswith(f"{tier}/{p}/") for r in runs for k in r)]


def render_tier1(table: Table, workdirs: dict) -> tuple[str, dict]:
    runs = _runs(workdirs)
    types = [*STYLE, *LOGIC]
    rows = [f"{t} ({'style' if t in STYLE else 'logic'})" for t in types]
    parts, data = [], {"sections": []}
    truth = {
        (row, "wrong step (truth)"): f"tier1/truth/{t}/error_share" for row, t in zip(rows, types)
    }
    for prm in _prms(runs, "tier1"):
        cols = {"Δr_last": "dlast", "Δr_min": "dmin", "AUROC (−r_min)": "auroc"}
        keys = {
            (row, c): f"tier1/{prm}/{t}/{m}" for row, t in zip(rows, types) for c, m in cols.items()
        }
        keys |= truth
        md, js = render_table(
            title=f"{PRM_LABELS[prm]}: perturbed vs clean held-out solutions",
            rows=rows, columns=[*cols, "wrong step (truth)"], cells=_cells(runs, keys),
        )  # fmt: skip
        parts += [md, ""]
        data["sections"].append(js)
    f1_cols = {
        "F1": "f1", "acc. erroneous": "acc_error", "acc. correct": "acc_correct",
        "r_last slipped": "r_last",
    }  # fmt: skip
    prms = _prms(runs, "tier1")
    keys = {(PRM_LABELS[p], c): f"tier1/{p}/slips/{m}" for p in prms for c, m in f1_cols.items()}
    keys |= {(PRM_LABELS[p], "r_last clean"): f"tier1/{p}/clean/r_last" for p in prms}
    md, js = render_table(
        title="ProcessBench-style first-error F1 on held-out slips (threshold 0.5)",
        rows=[PRM_LABELS[p] for p in prms], columns=[*f1_cols, "r_last clean"],
        cells=_cells(runs, keys),
    )  # fmt: skip
    data["sections"].append(js)
    return "\n".join([*parts, md, ""]), data


def render_tier2(table: Table, workdirs: dict) -> tuple[str, dict]:
    runs = _runs(workdirs)
    cols = {
        "r_last before": "r_before", "random suffix": "r_random_suffix", "after GCG": "r_gcg",
        "after continuous": "r_continuous", "GCG success (r > 0.5)": "success_gcg",
        "continuous success": "success_continuous", "peak width": "peak_width",
    }  # fmt: skip
    prms = _prms(runs, "tier2")
    keys = {(PRM_LABELS[p], c): f"tier2/{p}/{m}" for p in prms for c, m in cols.items()}
    md, js = render_table(
        title="r_last of invalid (slipped) solutions before and after an adversarial suffix",
        rows=[PRM_LABELS[p] for p in prms], columns=list(cols), cells=_cells(runs, keys),
    )  # fmt: skip
    return md + "\n", {"sections": [js]}


def render_tier3(table: Table, workdirs: dict) -> tuple[str, dict]:
    runs = _runs(workdirs)
    cols = {
        "PRM reward before RL": "r_initial", "PRM reward after RL": "r_final",
        "accuracy before": "acc_initial", "accuracy after": "acc_final",
        "reward of canonical rewrite": "r_canonical", "stylistic share": "stylistic_share",
        "non-canonical outputs after": "non_canonical_final",
    }  # fmt: skip
    prms = _prms(runs, "tier3")
    keys = {(PRM_LABELS[p], c): f"tier3/{p}/{m}" for p in prms for c, m in cols.items()}
    md, js = render_table(
        title="GRPO against the PRM's last-step reward: reward, exact-match accuracy, style",
        rows=[PRM_LABELS[p] for p in prms], columns=list(cols), cells=_cells(runs, keys),
        paper={(PRM_LABELS[p], "stylistic share"): 0.43 for p in prms},
    )  # fmt: skip
    return md + "\n", {"sections": [js]}


def write_figures(table: Table, workdirs: dict, out: pathlib.Path) -> list[pathlib.Path]:
    from projects.prm_biasbench import figures

    return figures.write(table.name, list(workdirs.values()), out)


def _tier(name: str) -> tuple[Row, ...]:
    return (Row("every PRM and seed", "", (("tiers", (name,)),)),)


TABLES = {
    "tier1": Table(
        name="tier1",
        title="Tier 1: static perturbations (Δr and detection AUROC per type and PRM) and F1",
        config="cpu",
        seeds=SEEDS,
        rows=_tier("tier1"),
        sections=(),
        render=render_tier1,
        notes=(
            "Δr = mean over held-out solutions of r(perturbed) − r(clean); AUROC of telling "
            "perturbed from clean by −r_min (0.5: no reaction, 1: every perturbed solution "
            "below every clean one). 'wrong step (truth)': share of perturbed solutions with a "
            "wrong step by the problem-aware labels (0 for style, 1 for logic types). Paper: "
            "style perturbations move rewards by < 0.1, logic errors are caught inconsistently "
            "and different PRMs fail on different types (ProcessBench, real PRMs).",
        ),
    ),  # fmt: skip
    "tier2": Table(
        name="tier2",
        title="Tier 2: adversarial suffixes on invalid solutions, per PRM",
        config="cpu",
        seeds=SEEDS,
        rows=_tier("tier2"),
        sections=(),
        render=render_tier2,
        notes=(
            "Means over the attacked solutions: r_last without a suffix, with the random "
            "initial suffix (control), after GCG, after the continuous embedding attack "
            "(started from the GCG suffix: an upper bound). Peak width: share of random "
            "single-token edits of the GCG suffix keeping r_last > 0.9. Paper: gradient attacks "
            "inflate rewards of invalid trajectories; the peaks are wide.",
        ),
    ),  # fmt: skip
    "tier3": Table(
        name="tier3",
        title="Tier 3: RL against the PRM's last-step reward (GRPO), the hacking gap",
        config="cpu",
        seeds=SEEDS,
        rows=_tier("tier3"),
        sections=(),
        render=render_tier3,
        notes=(
            "One sample per held-out prompt at temperature 1 before and after RL. Stylistic "
            "share = (r_after − r_canonical) / (r_after − r_before), shown only for runs whose "
            "reward gain exceeds rl.min_gain. Paper (AIME, Skywork-PRM, verl): PRM reward "
            "> 0.9 with accuracy < 4%; 43% of the reward gain from stylistic shortcuts.",
        ),
    ),  # fmt: skip
}
FIGURES = {"tier2": write_figures, "tier3": write_figures}

# What the tables generated at revision f3dcfbb show.
CLAIMS = (
    Claim(
        "Style changes barely move PRM rewards (|Δr| < 0.1) while logic errors are caught "
        "inconsistently, different PRMs failing on different perturbations.",
        "partly",
        "tier1: every style type moves r_last by less than 0.1 for both PRMs (largest 0.090, "
        "MiniLM synonym), and logic errors are caught inconsistently (decoder AUROC 0.40-0.66, "
        "MiniLM 0.51-0.58, skipped_step below 0.5 for both), the decoder reacting most to "
        "contradiction and MiniLM to none; but both PRMs are weak verifiers (slip F1 0.395 and "
        "0.007), so logic errors move rewards about as little as style: no dissociation beyond "
        "a generally weak verifier can be read off",
    ),
    Claim(
        "Gradient-based attacks inflate the rewards of invalid trajectories; the reward "
        "landscape has wide exploitable peaks.",
        "partly",
        "tier2: GCG suffixes raise r_last of slipped solutions from 0.377 to 0.794 (decoder) "
        "and 0.505 to 0.732 (MiniLM) against 0.384 and 0.531 for a random suffix; the "
        "continuous attack reaches 0.982 and 1.000; peaks are not wide: r_last falls steadily "
        "with Hamming distance from the GCG suffix (figure) and almost no single-token edit "
        "keeps it above 0.9 (peak width 0.021 and 0.000)",
    ),
    Claim(
        "Under RL against a PRM the policy reaches high PRM reward while ground-truth accuracy "
        "stays low, and a large share (43%) of the reward gain is stylistic.",
        "partly",
        "tier3 (decoder PRM, GRPO, 100 steps): PRM reward 0.566 -> 0.954 while exact-match "
        "accuracy falls 0.719 -> 0.029 (seed 0 collapses to one short false equation the PRM "
        "rates highly); the stylistic share, 0.753 ± 1.298 over 3 seeds, is too unstable to "
        "confirm or refute the 43%",
    ),
)
