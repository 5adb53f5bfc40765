"""The tables this project reproduces (`python launch/reproduce.py projects/teamwork`)."""

from projects.teamwork.figures import score_figure
from shared.tables import Column, Row, Section, Table

BENCHMARKS = (
    ("synthetic", "synthetic"),
    ("nonlinear", "nonlinear"),
    ("Daphnet+inj", "daphnet"),
)
METRICS = (
    ("VUS-PR", "vus_pr"),
    ("VUS-ROC", "vus_roc"),
    ("affiliation F1", "aff_f1"),
    ("F1", "f1"),
    ("PA-F1", "pa_f1"),
)
MAIN_ROWS = (
    Row("TeamWork (Reconstruction)", "teamwork"),
    Row("channel-independent", "independent"),
    Row("symmetric all-to-all", "symmetric"),
    Row("PCA (lagged windows)", "pca"),
)

MAIN = Table(
    name="main",
    title="TeamWork vs baselines, CPU scale (3 seeds; benchmarks and models seeded together)",
    config="cpu",
    seeds=(0, 1, 2),
    rows=MAIN_ROWS,
    compare=(
        ("TeamWork (Reconstruction)", "channel-independent"),
        ("TeamWork (Reconstruction)", "symmetric all-to-all"),
        ("TeamWork (Reconstruction)", "PCA (lagged windows)"),
    ),
    sections=tuple(
        Section(
            label,
            tuple(Column(b_label, metric, (("benchmark", b),)) for b_label, b in BENCHMARKS),
        )
        for label, metric in METRICS
    ),
    notes=(
        "Threshold: TSLib percentile over train+test scores at the true anomaly ratio; F1 is "
        "point-wise, PA-F1 after point adjustment (inflates every method). VUS uses buffers "
        "0..50. synthetic/nonlinear: 12 channels (3 dominant), 10,000 train / 5,000 test steps; "
        "Daphnet+inj: aeon's Daphnet S06R02E0 (9 channels) split in halves, anomalies injected. "
        "The paper's numbers are on other (real) data and are not comparable.",
    ),
)

_ABL = (("benchmark", "synthetic"),)
ABLATION = Table(
    name="ablation",
    title="Ablations of the TeamWork reconstruction on the synthetic benchmark (3 seeds)",
    config="cpu",
    seeds=(0, 1, 2),
    rows=(
        Row("TeamWork", "teamwork", (("methods", ("teamwork", "symmetric")),)),
        Row(
            "no roles (symmetric all-to-all)",
            "symmetric",
            (("methods", ("teamwork", "symmetric")),),
        ),
        Row("random roles", "random_roles", (("methods", ("random_roles", "inverted_roles")),)),
        Row("inverted roles", "inverted_roles", (("methods", ("random_roles", "inverted_roles")),)),
        Row("single mask span", "single_span", (("methods", ("single_span", "no_gate")),)),
        Row("no gate (g = 1)", "no_gate", (("methods", ("single_span", "no_gate")),)),
    ),
    compare=(
        ("TeamWork", "no roles (symmetric all-to-all)"),
        ("TeamWork", "random roles"),
        ("TeamWork", "single mask span"),
        ("TeamWork", "no gate (g = 1)"),
    ),
    sections=(
        Section(
            "synthetic benchmark",
            tuple(Column(label, metric, _ABL) for label, metric in METRICS),
        ),
    ),
    notes=(
        "Rows differ from TeamWork in one thing each; 'no roles' is the symmetric baseline of "
        "the main table. Single span = the middle of the FFT-derived spans.",
    ),
)

TABLES = {t.name: t for t in (MAIN, ABLATION)}
FIGURES = {"main": score_figure}
