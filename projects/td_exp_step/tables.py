"""results/main.md (+ .json): error at T in {1e3, 1e4, 1e5} per schedule, mean ± sd over the
evaluation seeds, for each MRP, sampling regime and error metric; then the figures.

    python launch/reproduce.py projects/td_exp_step

Every seed and schedule of the table runs inside one vmapped scan, so the table has one run and
is rendered from it (`render`) instead of from per-seed cells."""

from __future__ import annotations

import json
import pathlib

import numpy as np

from shared.tables import Claim, Row, Table

TABLE_HORIZONS = (1000, 10000, 100000)
MRP_LABELS = {
    "garnet": "Garnet",
    "icu_sepsis": "ICU-Sepsis (expert policy, continuing)",
}
REGIME_LABELS = {"iid": "i.i.d. sampling", "markov": "Markovian sampling (one trajectory)"}
METRIC_LABELS = {"param": "‖θ_T − θ*‖²", "value": "‖Φ(θ_T − θ*)‖²_D"}


def cell_text(values: list[float]) -> str:
    """mean ± sd (ddof 1) in scientific notation; diverged seeds are counted, not dropped."""
    v = np.asarray(values, np.float64)
    bad = int((~np.isfinite(v)).sum())
    if bad:
        return f"diverged on {bad}/{len(v)} seeds"
    return f"{v.mean():.2e} ± {v.std(ddof=1):.1e}"


def schedule_text(s: dict) -> str:
    if s["family"] == "constant":
        return f"η={s['value']:.3g}"
    if s["family"] == "exponential":
        return f"η0={s['value']:.3g}, β={s['beta']:g}" + (f", λ={s['lam']:g}" if s["lam"] else "")
    if s["family"] == "inv_t":
        return f"c={s['value']:.3g}"
    return f"c={s['value']:.3g}"


def build(summary: list[dict], problems: dict) -> tuple[str, dict]:
    """The markdown body and its json from a run's summary.json and problems.json."""
    by = {(e["mrp"], e["regime"], e["T"], e["row"], e["metric"]): e for e in summary}
    keys = {(e["mrp"], e["regime"]) for e in summary}
    rows = list(dict.fromkeys((e["row"], e["label"]) for e in summary))
    run_horizons = sorted({k[2] for k in by})
    horizons = [t for t in TABLE_HORIZONS if t in run_horizons] or run_horizons  # smoke: all
    top = max(horizons)
    lines, data = [], []
    for mrp in MRP_LABELS:
        for regime in REGIME_LABELS:
            if (mrp, regime) not in keys:
                continue
            p = problems[mrp]
            for metric, mlabel in METRIC_LABELS.items():
                lines += [
                    f"## {MRP_LABELS[mrp]}, {REGIME_LABELS[regime]}: {mlabel}",
                    "",
                    f"γ={p['gamma']}, k={p['features']} features, {p['states']} states, "
                    f"ω={p['omega']:.3g}, ‖θ*‖={p['theta_star_norm']:.3g}, "
                    f"σ_r={p['reward_noise']}"
                    + (f", λ_min((A+Aᵀ)/2)={p['a_sym_min']:.3g}." if "a_sym_min" in p else "."),
                    "",
                ]
                reg = regime == "markov" and metric == "param"
                cols = [f"T={t:.0e}" for t in horizons] + [f"chosen at T={top:.0e}"]
                cols += [f"‖θ_T − θ_λ‖² at T={top:.0e}"] if reg else []
                lines += ["| schedule | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
                means = {}
                for key, label in rows:
                    if (mrp, regime, top, key, metric) not in by:
                        continue
                    cells = [
                        cell_text(by[(mrp, regime, t, key, metric)]["values"]) for t in horizons
                    ]
                    last = by[(mrp, regime, top, key, metric)]
                    cells.append(schedule_text(last["schedule"]))
                    if reg:
                        cells.append(cell_text(last["values_reg"]))
                    lines.append(f"| {label} | " + " | ".join(cells) + " |")
                    means[label] = float(np.mean(last["values"]))
                    for t in horizons:
                        e = by[(mrp, regime, t, key, metric)]
                        v = np.asarray(e["values"])
                        data.append(
                            {
                                "mrp": mrp,
                                "regime": regime,
                                "metric": metric,
                                "row": label,
                                "T": t,
                                "mean": float(v.mean()),
                                "std": float(v.std(ddof=1)),
                                "n": len(v),
                                "values": e["values"],
                                "schedule": e["schedule"],
                            }
                        )
                best = min(means, key=lambda k: means[k] if np.isfinite(means[k]) else np.inf)
                exp = next(lb for k, lb in rows if k == "exp")
                dflt = next(lb for k, lb in rows if k == "exp_default")
                lines += [
                    "",
                    f"At T={top:.0e} the lowest mean is *{best}*; tuned exponential is "
                    f"{means[exp] / means[best]:.2f}× it, untuned exponential "
                    f"{means[dflt] / means[best]:.2f}×.",
                    "",
                ]
    return "\n".join(lines), {"cells": data}


NOTES = (
    "Each tuned row picks its grid value (η, η0 and β, c, or η0 and λ) with the lowest mean "
    "error on the tuning seeds, separately per (MRP, regime, T, metric), and is reported on fresh "
    "evaluation seeds; the untuned rows use fixed constants chosen before any run. All schedules "
    "of one seed see the same transitions. The exponential schedule η_t = η0 (β/T)^(t/T) and the "
    "regularized TD(0) update are Reconstructions (see README). c/√(t+1) reports the "
    "Polyak-Ruppert average of its iterates; every other row reports the last iterate θ_T. "
    "θ_0 = 0; Markovian runs start from s_0 ~ d (no burn-in). ICU-Sepsis rewards are the expected "
    "reward r_π(s) of each state under the policy (no sampling noise in the reward)."
)


def render(table: Table, workdirs: dict) -> tuple[str, dict]:
    """The table body and json from the one run of the table (all seeds and schedules)."""
    (run_dir,) = workdirs.values()
    summary = json.loads((run_dir / "summary.json").read_text())
    problems = json.loads((run_dir / "problems.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    body, data = build(summary, problems)
    n_tune, n_eval = config["num_tune_seeds"], config["num_eval_seeds"]
    seeds = (
        f"Sampling seeds 0..{n_tune - 1} tune, {n_tune}..{n_tune + n_eval - 1} report "
        f"(n={n_eval}); T in {config['horizons']}; the full config is in {table.name}.json."
    )
    return "\n".join([NOTES, "", seeds, "", body]), data | {"notes": NOTES, "config": config}


def write_figures(table: Table, workdirs: dict, out: pathlib.Path) -> list[pathlib.Path]:
    from projects.td_exp_step import figures

    (run_dir,) = workdirs.values()
    return figures.write_all(run_dir, out)


TABLES = {
    "main": Table(
        name="main",
        title="TD(0) step-size schedules: final error E‖θ_T − θ*‖² and value error, mean ± sd",
        config="cpu",
        seeds=(0,),  # the run's own seeds are vectorized inside it
        rows=(Row("every schedule and seed", ""),),
        sections=(),
        render=render,
    )
}
TABLES["gamma099"] = Table(
    name="gamma099",
    title="Garnet at γ = 0.99 (the spec's second discount): the same schedules, grids and seeds",
    config="cpu",
    seeds=(0,),  # the run's own seeds are vectorized inside it
    rows=(
        Row(
            "every schedule and seed",
            "",
            (("garnet.gamma", 0.99), ("mrps", ("garnet",)), ("noise_ablation", False)),
        ),
    ),
    sections=(),
    render=render,
    notes=(
        "The Garnet instance, features, reward noise, horizons, grids and seeds of `main`; only "
        "γ differs (0.99 instead of 0.9), so c = 2/(1−γ) is 200 and the tuned c grid is "
        "200·2^(−4..4). ICU-Sepsis keeps γ = 0.95 and is not run here.",
    ),
)
FIGURES = {"main": write_figures}

# The paper's claims and what the table shows at this scale (gathered into RESULTS.md).
CLAIMS = (
    Claim(
        "With i.i.d. samples, TD(0) with exponentially decaying steps reaches the optimal "
        "bias-variance trade-off for the last iterate without knowing ω.",
        "partly",
        "main, T = 1e+05: on Garnet tuned exponential is 2.32x-3.00x the best schedule "
        "(c/√t with averaging, which needs averaging; c/(ωt), which needs ω); on ICU-Sepsis it "
        "has the lowest value error but 4.16x the constant step's parameter error; gamma099 "
        "(Garnet, γ = 0.99): 2.34x-3.00x the best, as at γ = 0.9",
    ),
    Claim(
        "The exponential schedule needs no problem-dependent tuning: a fixed step constant works.",
        "holds",
        "main: the row 'exponential, untuned (η0=1, β=1)' stays close to the tuned exponential "
        "in every section (gamma099 too: 1.72e-03 vs 1.45e-03, Garnet i.i.d.); "
        "b_robustness_eta0.png: its error varies far less over the η0 grid than the constant "
        "step's",
    ),
    Claim(
        "Steps that use ω (c/(ω(t+t0))) fail when ω is misspecified.",
        "partly",
        "main, Garnet: at the theory constant ω×0.1 is about 9x worse than true ω, but ω×10 is "
        "better and tuning c absorbs the scale; gamma099 (γ = 0.99, theory constant 200): the "
        "same pattern (ω×0.1 8.52e-01, true ω 8.73e-02, ω×10 9.39e-03), and every tuned c hits "
        "the grid's lower edge",
    ),
    Claim(
        "Under Markovian sampling, regularized TD(0) with exponential steps matches prior "
        "rates without projections, averaging, τ_mix or ω.",
        "partly",
        "main, Markovian sections: on Garnet regularized exponential is level with plain "
        "exponential TD but above the ω- or averaging-based baselines; on ICU-Sepsis its bias "
        "dominates (‖θ_T − θ_λ‖² 2.61e-01 vs ‖θ_T − θ*‖² 2.64e+01); rates are not separable "
        "from constants at T <= 1e5",
    ),
    Claim(
        "Without reward noise the exponential schedule's error decays almost geometrically "
        "(noise adaptivity).",
        "does not hold",
        "figure c_noise.png (σ_r = 0 ablation, not a column of main): still ≈ 1/T, since "
        "random transitions keep the TD update noisy at θ*",
    ),
)
