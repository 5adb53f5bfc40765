"""The tables this project reproduces (`python launch/reproduce.py projects/conpress`).

One run holds every seed of its table: the base model is built once and the run repeats the
sampling and SFT stages `repeats` times with their own seeds (the spec's "3 seeds (sampling and
SFT)"), so each table is rendered from one run (`render`), mean ± std over the repeats.
"""

from __future__ import annotations

from projects.conpress.experiment import CONFIGS
from projects.conpress.figures import main_figures, ns_of, repeats_of, smollm2_figure
from shared.results import render_table
from shared.tables import Claim, Column, Row, Table, compare_rows

MODEL_ROWS = (  # (label, metric prefix)
    ("base model", "base"),
    ("control SFT (correct single-question samples)", "control"),
    ("ConPress SFT (correct N = 4 segments)", "conpress"),
    ("ConPress without the correctness filter", "conpress_unfiltered"),
    ("ConPress + length filter", "conpress_length"),
)
SPLITS = (
    ("in_dist", "In-distribution split (3-6 operations; the MATH500 analogue)"),
    ("hard", "Hard split (7-8 operations, longer than any training question; the AIME25 analogue)"),
)
# The paper's token reductions of ConPress (abstract): MATH500 and AIME25, an LRM; shown beside
# the synthetic analogues, which are not comparable numbers.
PAPER_REDUCTION = {"in_dist": 0.59, "hard": 0.33}
RN_COLUMNS = (  # (label, metric after "rn/N{n}/", higher is better)
    ("r(N), correct in both", "r_correct", False),
    ("r(N), all parsed", "r_all", False),
    ("tokens per question", "tokens", False),
    ("accuracy", "acc", True),
    ("parse failures (share of outputs)", "parse_failure", False),
    ("outputs with a \\boxed{} answer", "boxed", True),
    ("hit the token budget", "truncated", False),
    ("output tokens / N (no parsing)", "output_tokens_per_question", False),
)


def _cells(reps, rows, columns) -> dict[tuple[str, str], list[float]]:
    """(row label, column label) -> values over repeats; rows/columns give (label, metric)."""
    cells = {}
    for rl, rp in rows:
        for cl, cm in columns:
            values = [rep[f"{rp}/{cm}"] for rep in reps if f"{rp}/{cm}" in rep]
            cells[(rl, cl)] = [v for v in values if v == v]  # nan: not measured
    return cells


def _section(title, reps, rows, columns, digits=3, paper=None, compare=()) -> tuple[str, dict]:
    cells = _cells(reps, [(r[0], r[1]) for r in rows], [(c[0], c[1]) for c in columns])
    md, js = render_table(
        title=title, rows=[r[0] for r in rows], columns=[c[0] for c in columns],
        cells=cells, paper=paper or {}, digits=digits,
    )  # fmt: skip
    cols = tuple(Column(c[0], c[1], higher_is_better=c[2]) for c in columns)
    verdicts = [compare_rows(a, b, cols, cells) for a, b in compare]
    if verdicts:
        md += "\n\n" + "\n".join(verdicts)
        js["comparisons"] = verdicts
    return md, js


def _rn_section(reps, ns, title) -> tuple[str, dict]:
    rows = [(f"N = {n}", f"rn/N{n}") for n in ns]
    return _section(title, reps, rows, RN_COLUMNS)


def render_main(table: Table, workdirs: dict) -> tuple[str, dict]:
    reps = repeats_of(next(iter(workdirs.values())))
    rows = [(label, prefix) for label, prefix in MODEL_ROWS if f"{prefix}/in_dist_acc" in reps[0]]
    ctrl, conp = MODEL_ROWS[1][0], MODEL_ROWS[2][0]
    parts, data = [], {"sections": []}
    for split, title in SPLITS:
        cols = [
            ("tokens ↓", f"{split}_tokens", False),
            ("accuracy ↑", f"{split}_acc", True),
            ("token reduction vs base ↑", f"{split}_reduction", True),
            ("hit the token budget", f"{split}_truncated", False),
        ]
        paper = {(conp, "token reduction vs base ↑"): PAPER_REDUCTION[split]}
        compare = [(conp, MODEL_ROWS[0][0]), (conp, ctrl)]
        md, js = _section(title, reps, rows, cols, paper=paper, compare=compare)
        parts.append(md)
        data["sections"].append(js)
    buckets = sorted({int(k.split("_b")[1]) for k in reps[0] if k.startswith("base/acc_b")})
    md, js = _section(
        "Accuracy by number of operations (difficulty bucket)",
        reps, rows, [(f"{b} ops", f"acc_b{b}", True) for b in buckets],
    )  # fmt: skip
    parts.append(md)
    data["sections"].append(js)
    sft_rows = rows[1:]
    md, js = _section(
        "SFT data (after the filters; every variant trains on the same number of pairs)",
        reps, sft_rows,
        [("pairs", "sft_pairs", True), ("tokens per response", "sft_tokens", False),
         ("share correct", "sft_correct", True),
         ("share with every step right", "sft_trace_right", True)],
    )  # fmt: skip
    parts.append(md)
    data["sections"].append(js)
    md, js = _rn_section(reps, ns_of(reps), "Self-compression of the base model: r(N) by N")
    parts.append(md)
    data["sections"].append(js)
    return "\n\n".join(parts) + "\n", data


def render_smollm2(table: Table, workdirs: dict) -> tuple[str, dict]:
    reps = repeats_of(next(iter(workdirs.values())))
    md, js = _rn_section(reps, ns_of(reps), "SmolLM2-135M-Instruct: r(N) by N")
    return md + "\n", {"sections": [js]}


_CPU, _SMOL = CONFIGS["cpu"], CONFIGS["smollm2"]
MAIN_NOTES = (
    f"One run: the synthetic base model (a word-level LLaMA, {_CPU.model.num_layers} blocks of "
    f"width {_CPU.model.dim}) is trained once ({_CPU.base.steps} steps) on single- and "
    f"{'/'.join(map(str, _CPU.task.base_ns[1:]))}-question prompts whose outputs share one "
    f"budget of 0-{_CPU.task.max_checks} check lines, so the pressure is built in by "
    "construction; then the sampling and SFT stages run "
    f"{_CPU.repeats} times with their own seeds: cells are mean ± std over those repeats. "
    f"Numbers lie in [0, {_CPU.task.max_value}] (the spec suggests < 100; see the README). "
    f"Sampling: temperature {_CPU.sampling.temperature}, top-p {_CPU.sampling.top_p}, "
    f"{_CPU.sampling.max_new_per_question} new tokens per question; tokens are the model's "
    "word tokens of the answer to a single-question prompt (prompt and eos not counted); "
    f"{_CPU.task.eval_questions} in-distribution and {_CPU.task.hard_questions} hard held-out "
    "questions. SFT data: the "
    f"{_CPU.task.pool_questions}-question training pool sampled {_CPU.sampling.pool_samples} "
    f"times in prompts of {_CPU.conpress_n} (ConPress) and of 1 (control, length-filter "
    "medians); every variant trains on the same number of pairs (at most "
    f"{_CPU.sft_examples}) for {_CPU.sft.steps} steps of {_CPU.sft.batch_size} at lr "
    f"{_CPU.sft.lr:g}, from the same base model, and is evaluated on the same sampling draws. "
    "Beside the ConPress row: the paper's token reductions (MATH500 0.59, AIME25 0.33), of an "
    "LRM on real benchmarks, not comparable numbers.",
)
SMOLLM2_NOTES = (
    "SmolLM2-135M-Instruct (the offline GGUF, dequantized to float32), its ChatML template "
    f"with the default system turn; {_SMOL.rn_questions} word problems (half of one step, half "
    "of two) asked in prompts of "
    + ", ".join(f"{n} ({_SMOL.rn_questions // n} prompts)" for n in _SMOL.ns)
    + f"; temperature {_SMOL.sampling.temperature}, top-p {_SMOL.sampling.top_p}, "
    f"{_SMOL.sampling.max_new_per_question} new tokens per question; {_SMOL.repeats} sampling "
    "seeds, mean ± std. No SFT. r(N) needs parsed outputs (### Qi markers); 'output tokens / "
    "N' splits whole outputs evenly without parsing, so it also counts preambles and "
    "questions left unanswered.",
)


MAIN = Table(
    name="main",
    title="ConPress on the synthetic task (pressure built in): tokens and accuracy of the base "
    "model, the control SFT and ConPress SFT (± filters)",
    config="cpu",
    seeds=(0,),
    rows=(Row("all rows and repeats", "main"),),
    sections=(),
    render=render_main,
    notes=MAIN_NOTES,
)
SMOLLM2 = Table(
    name="smollm2",
    title="Real model: SmolLM2-135M-Instruct on 1-2-step word problems, one and several "
    "questions per prompt",
    config="smollm2",
    seeds=(0,),
    rows=(Row("all N and repeats", "smollm2"),),
    sections=(),
    render=render_smollm2,
    notes=SMOLLM2_NOTES,
)
TABLES = {"main": MAIN, "smollm2": SMOLLM2}
FIGURES = {"main": main_figures, "smollm2": smollm2_figure}

# The paper's claims and what the tables generated at revision f3dcfbb show.
CLAIMS = (
    Claim(
        "Several independent questions in one prompt make a reasoning model write a shorter "
        "trace per question (Self-Compression): r(N) < 1, falling with N.",
        "not testable here",
        "no reasoning model runs offline: the synthetic base model's r(N) (main: 0.72 at N = 2, "
        "0.59 at N = 4) is built in by construction; the real-model probe (smollm2) gets no "
        "parsable multi-question output from SmolLM2-135M-Instruct (parse failures 1.000 at "
        "N = 2 and 4, accuracy 0 at every N), so r(N) is undefined; its unparsed output "
        "tokens per question grow with N (69.7, 75.0, 81.4)",
    ),
    Claim(
        "SFT on parsed, correctness-filtered per-question traces of multi-question outputs, in "
        "the single-question format, cuts reasoning tokens substantially (-59% MATH500, -33% "
        "AIME25) at competitive accuracy.",
        "partly",
        "main (pressure built in): ConPress SFT cuts tokens by 0.382 in distribution and 0.320 "
        "on the hard split, but accuracy falls from 0.585 to 0.281 and 0.214 to 0.089: only "
        "0.51 of the answer-correct N = 4 segments list the exact steps (control: 0.91)",
    ),
    Claim(
        "The reduction comes from the multi-question pressure, not from self-training on "
        "correct samples: a control SFT on the same number of correct single-question samples "
        "does not shorten the traces.",
        "holds",
        "main: control SFT token reduction 0.017 ± 0.036 (in distribution) and 0.082 ± 0.035 "
        "(hard) vs ConPress 0.382 and 0.320, on the same number of pairs; the pressure itself "
        "is built into the synthetic base model",
    ),
    Claim(
        "Filtering the segments for correctness keeps accuracy (ablation of the spec: without "
        "the correctness filter; with the length filter).",
        "holds",
        "main: without the correctness filter in-distribution accuracy is 0.099 vs 0.281 with "
        "it (0.196 of the unfiltered pairs are correct); the length filter changes nothing "
        "measurable (0.292, 40.1 vs 40.9 tokens)",
    ),
    Claim(
        "8k self-generated examples suffice, with no teacher, manual pruning or RL, on 4B-8B "
        "reasoning models.",
        "not testable here",
        "the `paper` config (an 8B LLaMA layout, 8k pairs) is only built, validated and "
        "rehearsed; the synthetic runs use about 143 pairs on a 0.46M-parameter model",
    ),
)
