"""The tables this project reproduces (`python launch/reproduce.py projects/scale`)."""

from __future__ import annotations

from projects.scale.figures import main_figures
from shared.tables import Claim, Column, Row, Section, Table

MAIN_ROWS = (
    ("AdamW", "adamw"),
    ("SGD", "sgd"),
    ("SGD+momentum", "sgd_momentum"),
    ("Column-norm SGD", "colnorm_sgd"),
    ("SCALE", "scale"),
    ("Momentum on every matrix", "momentum_all"),
    ("Muon", "muon"),
    ("GaLore", "galore"),
    ("APOLLO-Mini", "apollo_mini"),
)


PERPLEXITY = Section(
    "Validation perplexity (lower is better)",
    (Column("val ppl", "val_ppl", higher_is_better=False),),
    digits=3,
)


def _row(label: str, name: str, *extra) -> Row:
    return Row(label, name, (("optimizer", name), *extra))


MAIN = Table(
    name="main",
    title="Small LLaMA on Wikipedia leads (bytes): validation perplexity, memory, speed",
    config="cpu",
    seeds=(0, 1, 2),
    rows=tuple(_row(*r) for r in MAIN_ROWS),
    compare=(("SCALE", "AdamW"), ("SCALE", "Column-norm SGD"), ("SCALE", "Muon")),
    sections=(
        PERPLEXITY,
        Section(
            "Memory (float32 here) and throughput",
            (
                Column("state MB", "state_mb", higher_is_better=False),
                Column("model+state MB", "total_mb", higher_is_better=False),
                Column("total / AdamW", "total_vs_adamw", higher_is_better=False),
                Column("state / AdamW", "state_vs_adamw", higher_is_better=False),
                Column("tokens/s", "tokens_per_s", verdict=False),
                Column("peak LR (swept)", "lr", verdict=False),
            ),
            digits=4,
        ),
    ),
    notes=(
        "LLaMA decoder (dim 64, 2 layers, 4 heads, SwiGLU 172, untied head, byte vocabulary 257; "
        "123,840 parameters), 150 steps x 16 x 64 tokens = 154k training tokens, warm-up 10% "
        "then cosine to 0.1x; perplexity on 512 held-out windows (32.8k tokens). Each "
        "optimizer's peak LR is the best of a 3-point log grid (+1 point past an edge) after 75 "
        "steps with seed 0 (see sweep.md); the 3 reported seeds reuse it. Memory is exact bytes "
        "of the float32 pytrees. tokens/s is measured on a shared, loaded 2-core CPU: compare "
        "rows only loosely. The paper's numbers are at 60M-1B parameters on C4 (memory_paper.md).",
    ),
)

# The spec's Table A optimizers (momentum-everywhere and APOLLO-Mini stay in `main` only).
LONG_ROWS = tuple(r for r in MAIN_ROWS if r[1] not in ("momentum_all", "apollo_mini"))

MAIN_LONG = Table(
    name="main_long",
    title="~0.86M-parameter LLaMA, 3,000 steps on Wikipedia leads (bytes): the spec's CPU plan",
    config="long",
    seeds=(0,),  # one seed: seven optimizers x (sweep + 3,000 steps) fill the 90-minute budget
    rows=tuple(_row(*r) for r in LONG_ROWS),
    compare=(),  # one seed: no spread to judge a difference against
    sections=(
        PERPLEXITY,
        Section(
            "Memory (float32 here), LR and throughput",
            (
                Column("state MB", "state_mb", higher_is_better=False),
                Column("total / AdamW", "total_vs_adamw", higher_is_better=False),
                Column("peak LR (swept)", "lr", verdict=False),
                Column("LR bracketed (1 = worse on both sides)", "lr_bracketed", verdict=False),
                Column("tokens/s", "tokens_per_s", verdict=False),
            ),
            digits=4,
        ),
    ),
    notes=(
        "The spec's CPU model: LLaMA decoder (dim 128, 4 layers, 4 heads, SwiGLU 344, untied "
        "head, byte vocabulary 257; 857,472 parameters), 3,000 steps x 8 x 128 tokens = 3.1M "
        "training tokens (the spec's batch of 32 would need ~4x the time), warm-up 10% then "
        "cosine to 0.1x; perplexity on 512 held-out windows (65.5k tokens). Each optimizer's "
        "peak LR is the best of a 3-point log grid, walked up to two points past an edge, after "
        "300 steps with seed 0 (main_long_sweep.md): a shorter horizon than the reported run, "
        "whose optimum can sit somewhat lower. One seed, so differences smaller than main.md's "
        "seed spread (a few percent of perplexity) are not evidence. tokens/s is measured on a "
        "shared 2-core CPU and gets no verdict.",
    ),
)

ABLATION = Table(
    name="ablation",
    title="From SGD to SCALE: normalization, momentum placement, axis, norm, 1-D LR",
    config="cpu",
    seeds=(0, 1),  # two seeds: what the compute budget allowed (main.md has three)
    rows=(
        _row("SGD (1-D on AdamW)", "sgd_adam1d", ("lr_from", "sgd")),
        _row("+ column-norm", "colnorm_sgd"),
        _row("+ head momentum (SCALE)", "scale"),
        _row("momentum on every matrix", "momentum_all"),
        _row("SCALE, per-input axis", "scale_per_input", ("lr_from", "scale")),
        _row("SCALE, L2 norm, LR x sqrt(dim)", "scale_l2", ("lr_from", "scale"), ("lr_scale", 8.0)),
        Row(
            "SCALE, adam_lr 1e-3",
            "scale",
            (("optimizer", "scale"), ("lr_from", "scale"), ("adam_lr", 0.001)),
        ),
    ),
    compare=(
        ("+ column-norm", "SGD (1-D on AdamW)"),
        ("+ head momentum (SCALE)", "+ column-norm"),
        ("+ head momentum (SCALE)", "momentum on every matrix"),
        ("+ head momentum (SCALE)", "SCALE, per-input axis"),
    ),
    sections=(
        PERPLEXITY,
        Section(
            "State memory and LR",
            (
                Column("state MB", "state_mb", higher_is_better=False),
                Column("peak LR", "lr", verdict=False),
            ),
            digits=4,
        ),
    ),
    notes=(
        "Same model, data and budget as main.md, seeds 0 and 1 only. Rows with 'lr_from' "
        "reuse another optimizer's swept LR instead of their own sweep: SGD (1-D on AdamW) "
        "uses SGD's; the per-input axis, "
        "L2 and adam_lr rows use SCALE's (L2 multiplied by sqrt(dim) = 8, so that layers whose "
        "fan-in is the model width get the same step as with RMS).",
    ),
)

# (paper's row, optimizer) and the official README's model+optimizer GB per size
PAPER_TOTAL_GB = {
    "Adam": ("adamw", (0.35, 0.81, 2.21, 8.04)),
    "Muon": ("muon", (0.23, 0.54, 1.47, 5.36)),
    "GaLore": ("galore", (0.28, 0.61, 1.59, 4.76)),
    "APOLLO-Mini": ("apollo_mini", (0.25, 0.46, 1.00, 3.20)),
    "SCALE": ("scale", (0.15, 0.32, 0.80, 2.81)),
}
SIZES = ("60m", "130m", "350m", "1b", "7b")
# the paper's tables call AdamW "Adam"
MEMORY_ROWS = (("Adam", "adamw"), *MAIN_ROWS[1:])
_PAPER_7B = {"APOLLO-Mini": 14.53, "SCALE": 13.74}

MEMORY_PAPER = Table(
    name="memory_paper",
    title="Parameter + optimizer-state memory at the paper's sizes (bf16, from shapes)",
    config="memory",
    seeds=(0,),
    rows=tuple(_row(*r) for r in MEMORY_ROWS),
    sections=(
        Section(
            "Model + optimizer state, GB (1e9 bytes)",
            tuple(Column(s.upper(), f"{s}_total_gb", higher_is_better=False) for s in SIZES),
            digits=2,
            paper=tuple(
                ((label, size.upper()), gb)
                for label, (_, gbs) in PAPER_TOTAL_GB.items()
                for size, gb in zip(SIZES, gbs, strict=False)
            )
            + tuple(((label, "7B"), gb) for label, gb in _PAPER_7B.items()),
        ),
        Section(
            "Optimizer state only, GB",
            tuple(Column(s.upper(), f"{s}_state_gb", higher_is_better=False) for s in SIZES),
            digits=3,
        ),
    ),
    notes=(
        "Exact bytes of jax.eval_shape(tx.init) on the bf16 parameter shapes (nothing "
        "allocated). GaLore ranks 128/256/256/512/1024 (official scripts), APOLLO-Mini rank 1, "
        "Muon with embeddings and lm_head on Adam. The paper's numbers are from the official "
        "README (7B: its APOLLO-Mini and SCALE entries); its Muon column counts one buffer for "
        "every parameter (0.23G at 60M), ours keeps Adam's two buffers for the embedding and "
        "head, hence more. GaLore at 350M: 1.39 GB at the official scripts' rank 256, against "
        "the README's 1.59. The same accounting matches the README exactly at 60M, 130M and 1B; "
        "at 350M it gives 1.58 GB at rank 384, 1.59 GB only at rank 388 and 1.78 GB at rank 512, "
        "so the README's entry (shared by its GaLore, Fira and APOLLO rows) was computed at a "
        "rank no script uses. We keep rank 256.",
    ),
)

TABLES = {
    "main": MAIN,
    "ablation": ABLATION,
    "memory_paper": MEMORY_PAPER,
    "main_long": MAIN_LONG,
}
FIGURES = {"main": main_figures, "main_long": main_figures}

# The paper's claims and what the tables show at this scale (gathered into RESULTS.md).
CLAIMS = (
    Claim(
        "Column-wise normalization of the gradient alone makes momentum-free SGD competitive "
        "with Adam.",
        "holds",
        "ablation: SGD 13.940 -> + column-norm 10.575; main: column-norm SGD 10.579 vs AdamW "
        "13.206 validation perplexity",
    ),
    Claim(
        "First-order momentum on the output layer only (SCALE) adds a further gain over "
        "column-normalized SGD.",
        "does not hold",
        "main and ablation: SCALE vs column-norm SGD within one std (10.547 vs 10.579); "
        "main_long (one seed): 4.435 vs 4.538, a 2.3% gap one seed cannot resolve",
    ),
    Claim(
        "SCALE matches or beats Adam in pretraining perplexity.",
        "partly",
        "main: SCALE 10.547 ± 0.154 vs AdamW 13.206 ± 0.878 (AdamW's LR sweep is not "
        "monotone, see sweep); main_long (857k parameters, 3,000 steps, one seed, every LR "
        "bracketed): SCALE 4.435 vs AdamW 4.186, 6% worse",
    ),
    Claim(
        "SCALE uses 35-45% of Adam's total memory from 60M to 1B parameters.",
        "holds",
        "memory_paper: SCALE 0.15/0.32/0.80/2.81 GB vs Adam 0.35/0.80/2.21/8.03 GB, SCALE equal "
        "to the official README; main: total / AdamW 0.3765 at 123,840 parameters",
    ),
    Claim(
        "SCALE beats memory-efficient baselines (GaLore, Fira, APOLLO) in perplexity.",
        "does not hold",
        "main: GaLore 9.457 and Muon 8.067 beat SCALE 10.547; SCALE beats APOLLO-Mini 12.434; "
        "main_long: GaLore 4.276 and Muon 4.016 beat SCALE 4.435; Fira not run",
    ),
    Claim(
        "At 7B SCALE beats APOLLO and Muon in both perplexity and memory.",
        "not testable here",
        "no 7B training; memory_paper (from shapes) reproduces only the memory entries "
        "(SCALE 13.74 GB vs APOLLO-Mini 14.53 GB at 7B)",
    ),
)
