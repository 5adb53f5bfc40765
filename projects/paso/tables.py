"""Tables `steps` (sequential iterations and distance to the sequential trajectory) and
`wallclock` (execution seconds on this machine), and the figure of accepted steps against
sequential iterations. Both tables read the same runs (one per problem and seed). The sweeps
(`tolerance` with the T/K-vs-P figure, `ema`, `optimizers`) are declared in sweeps.py.

    python launch/reproduce.py projects/paso
    python launch/reproduce.py projects/paso --table tolerance
"""

from __future__ import annotations

import pathlib

import numpy as np

from projects.paso.sweeps import SWEEP_TABLES, t_over_k_figure
from shared.tables import Claim, Column, Row, Section, Table

PROBLEMS = {
    "ackley": "Ackley d=10⁴",
    "mnist_mlp": "MNIST MLP",
    "llama": "LLaMA nano (Shakespeare)",
    "diffusion": "MNIST diffusion MLP",
}
WINDOWS = (4, 8, 16)
SEEDS = (0, 1, 2)


def _rows() -> tuple[Row, ...]:
    rows = []
    for key, label in PROBLEMS.items():
        over = (("problem", key),)
        rows.append(Row(f"{label}: Adam (sequential)", f"{key}/seq", over))
        rows += [Row(f"{label}: PASO P={p}", f"{key}/paso{p}", over) for p in WINDOWS]
        rows.append(Row(f"{label}: PASO P=8, fixed τ", f"{key}/paso8_fixed", over))
    return tuple(rows)


ROWS = _rows()
ACKLEY_P8 = f"{PROBLEMS['ackley']}: PASO P=8"
NOTES_STEPS = (
    "Final metric per problem: Ackley f(θ_T) (optimum 0, lower is better); MNIST MLP test "
    "accuracy; LLaMA byte-level validation perplexity (lower is better); diffusion held-out "
    "noise-prediction MSE (lower is better). T = 1000 (Ackley), 500 (MLP), 300 (LLaMA), "
    "400 (diffusion). K = outer (sequential) iterations, T/K the step reduction, m = gradient "
    "evaluations / T. Distances compare PASO's accepted iterates with the sequential run at 21 "
    "evenly spaced steps (∞-norm) and at T (relative 2-norm). PASO: τ0 = 1e-5 on the scale "
    "1e6 · mean squared difference, EMA decay 0.999, mean aggregate (official cv_v2 defaults), "
    "window evaluated with vmap on one device; 'fixed τ' keeps τ = 1e-5 (EMA off). "
    "The paper's Ackley number (86 iterations, 11.63×, "
    "P = 8, 8 GPUs) is the official optex_cmp setting (d = 10⁴, Adam lr 1e-3, U(−1, 1), "
    "T = 1000); its 12.3× (Llama-3.2-1B, WikiText-2) and 21× are not comparable settings.",
)
NOTES_WALL = (
    "Execution seconds of the compiled solve (compilation excluded), on the CPU the table was "
    "generated on (timings depend on what else the machine runs; ± is the spread over seeds). "
    "The P window gradients run "
    "as one vmap on the same cores as the sequential run, so PASO does m times the sequential "
    "gradient work with no extra hardware: a wall-clock speed-up below 1 is the expected outcome "
    "here and says nothing about P accelerators (see README).",
)

TABLES = {
    "steps": Table(
        name="steps",
        title="PASO vs sequential Adam: sequential iterations and trajectory error",
        config="cpu",
        seeds=SEEDS,
        rows=ROWS,
        sections=(
            Section("Final held-out metric", (Column("metric", "metric"),), digits=4),
            Section(
                "Sequential iterations",
                (
                    Column("K", "K", higher_is_better=False),
                    Column("T/K", "speedup"),
                    Column("grad evals / step", "evals_per_step", higher_is_better=False),
                ),
                digits=2,
                paper=(((ACKLEY_P8, "K"), 86.0), ((ACKLEY_P8, "T/K"), 11.63)),
            ),
            Section(
                "Distance to the sequential trajectory",
                (
                    Column("max_t ‖θ̂_t − θ_t‖∞", "max_dist", higher_is_better=False),
                    Column("‖θ̂_T − θ_T‖₂ / ‖θ_T‖₂", "rel_dist", higher_is_better=False),
                ),
                digits=5,
            ),
        ),
        notes=NOTES_STEPS,
    ),
    "wallclock": Table(
        name="wallclock",
        title="Wall-clock of sequential Adam vs PASO on this CPU",
        config="cpu",
        seeds=SEEDS,
        rows=ROWS,
        sections=(
            Section(
                "Execution time",
                (
                    Column("seconds", "seconds", higher_is_better=False, verdict=False),
                    Column("speed-up (sequential s / PASO s)", "wall_speedup", verdict=False),
                ),
                digits=3,
            ),
        ),
        notes=NOTES_WALL,
    ),
    **SWEEP_TABLES,
}


def accepted_steps_figure(table, workdirs: dict, out: pathlib.Path) -> list[pathlib.Path]:
    """results/accepted_steps.png: accepted steps (anchor) after k sequential iterations, seed 0
    of each problem, one line per window; the diagonal is sequential training."""
    from shared.results import pyplot, save_figure

    plt = pyplot()
    fig, axes = plt.subplots(1, len(PROBLEMS), figsize=(4 * len(PROBLEMS), 3.6))
    for ax, (key, label) in zip(np.atleast_1d(axes), PROBLEMS.items()):
        runs = [w for (over, seed), w in workdirs.items() if seed == 0 and f"'{key}'" in str(over)]
        if not runs:
            continue
        data = np.load(pathlib.Path(runs[0]) / "anchors.npz")
        T = int(data["T"])
        ax.plot([0, T], [0, T], "k--", lw=1, label="sequential")
        for p in WINDOWS:
            for name, text in ((f"paso{p}", f"P={p}"), (f"paso{p}_fixed", f"P={p}, fixed τ")):
                if name in data:
                    a = data[name]
                    ax.plot(np.arange(len(a)), a, label=f"PASO {text} (K={len(a) - 1})")
        ax.set(title=label, xlabel="sequential iterations k", ylabel="accepted steps")
        ax.set_xlim(0, T)
        ax.legend(fontsize=7)
    path = out / "accepted_steps.png"
    save_figure(fig, path)
    plt.close(fig)
    return [path]


FIGURES = {"steps": accepted_steps_figure, "tolerance": t_over_k_figure}


# The paper's claims and what the tables show at this scale (gathered into RESULTS.md).
CLAIMS = (
    Claim(
        "The T-step trajectory is a triangular nonlinear system whose unique solution is the "
        "sequential trajectory, and PASO reaches it in K <= T sequential iterations.",
        "holds",
        "steps, tolerance, ema, optimizers: K <= T on every row; tests: at τ = 0 PASO equals the "
        "sequential trajectory (SGD, momentum, Adam) to float32 rounding",
    ),
    Claim(
        "Step parallelism applies to gradient descent in general (SGD, Adam, ...).",
        "holds",
        "optimizers (MNIST MLP): T/K at P = 8 is 2.58 (SGD), 4.50 (SGD+momentum 0.9), 4.35 (Adam); "
        "tests: exactness at τ = 0 for all three",
    ),
    Claim(
        "PASO needs up to 21x fewer sequential steps (11.63x on Ackley with P = 8).",
        "partly",
        "steps, T/K: at most 6.25 with the official τ (diffusion MLP, P = 16); Ackley P = 8 "
        "5.12 ± 0.78 vs the paper's 11.63, which T/K <= P rules out at P = 8; tolerance: a fixed "
        "τ = 10, far above the official 1e-5, gives 12.66 on Ackley and 14.71 on the MLP at "
        "P = 16 (2 seeds)",
    ),
    Claim(
        "The step reduction comes at no loss of quality.",
        "partly",
        "steps, final metric: within one std of sequential Adam on Ackley and the MNIST MLP; "
        "LLaMA perplexity 11.3384 vs 7.7218 at P = 16, diffusion P = 16 worse; with adaptive τ "
        "the final parameters of the MLP, LLaMA and diffusion MLP are 0.06599 to 0.70230 "
        "(relative 2-norm) off the sequential ones; optimizers: SGD P = 8 0.9099 vs 0.9164; "
        "tolerance: MLP accuracy 0.8998 at τ = 10, P = 16, and even τ = 1e-7 leaves the MLP "
        "0.0239 to 0.0294 off the sequential parameters",
    ),
    Claim(
        "PASO gives up to 4.5x wall-clock speed-up (Llama-3.2-1B, diffusion model) with P "
        "accelerators.",
        "not testable here",
        "one 2-core CPU, the window as one vmap (wallclock: about 1 only on Ackley at P = 8, "
        "1.073 ± 0.144); the `paper` config is only built",
    ),
)
