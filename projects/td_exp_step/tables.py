"""results/main.md (+ .json): error at T in {1e3, 1e4, 1e5} per schedule, mean ± sd over the
evaluation seeds, for each MRP, sampling regime and error metric; then the figures.

    python -m projects.td_exp_step.tables                # runs the cpu config, then writes all
    python -m projects.td_exp_step.tables --run RUN_DIR  # from a finished run directory

`launch/reproduce.py` declares tables as one run per (row, seed); here every seed and schedule of
a table runs inside one vmapped scan (one run), so the table is written from that run directly and
TABLES is empty (reproduce.py has nothing to schedule for this project)."""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import sys
import time

import numpy as np

TABLES: dict = {}
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = pathlib.Path(__file__).resolve().parent / "results"
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
                    f"σ_r={p['reward_noise']}.",
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


def write(run_dir: pathlib.Path) -> list[pathlib.Path]:
    from projects.td_exp_step import figures
    from shared.results import device_summary, git_revision, write_json

    summary = json.loads((run_dir / "summary.json").read_text())
    problems = json.loads((run_dir / "problems.json").read_text())
    config = json.loads((run_dir / "config.json").read_text())
    run_info = json.loads((run_dir / "run.json").read_text())
    body, data = build(summary, problems)
    n_tune, n_eval = config["num_tune_seeds"], config["num_eval_seeds"]
    foot = (
        f"_Generated by `python -m projects.td_exp_step.tables` on "
        f"{datetime.date.today().isoformat()}; revision {git_revision()} (run at "
        f"{run_info['git_revision']}); device {device_summary()}; config "
        f"`{run_dir.parent.name}` (run dir `{run_dir.name}`), seeds 0..{n_tune - 1} tune, "
        f"{n_tune}..{n_tune + n_eval - 1} report (n={n_eval}); T in {config['horizons']}; "
        f"the full config is in main.json._"
    )
    title = "# TD(0) step-size schedules: final error E‖θ_T − θ*‖² and value error, mean ± sd"
    OUT.mkdir(exist_ok=True)
    (OUT / "main.md").write_text("\n".join([title, "", NOTES, "", body, foot]).rstrip() + "\n")
    write_json(OUT / "main.json", data | {"notes": NOTES, "footer": foot, "config": config})
    return [OUT / "main.md", *figures.write_all(run_dir, OUT)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=pathlib.Path, help="a finished run directory to read")
    parser.add_argument("--config", default="cpu", help="config to run when --run is not given")
    args = parser.parse_args(argv)
    run_dir = args.run
    if run_dir is None:
        sys.path.insert(0, str(ROOT / "launch"))
        import registry

        from projects.td_exp_step import experiment
        from shared import results
        from shared.config import dumps

        registry.enable_compile_cache()
        cfg = registry.get_config(experiment, "td_exp_step", args.config)
        run_dir = results.new_run_dir(ROOT / "runs", "td_exp_step", args.config)
        results.write_run_info(run_dir, dumps(cfg))
        t0 = time.time()
        results.write_json(run_dir / "results.json", experiment.run(cfg, run_dir))
        print(f"run {run_dir} took {time.time() - t0:.0f} s", flush=True)
    for path in write(run_dir):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
