from shared.tables import Column, Row, Section, Table, compare_rows, overrides_for


def test_compare_rows_respects_direction_and_spread():
    cols = (
        Column("acc", "acc"),
        Column("rmse", "rmse", higher_is_better=False),
        Column("f1", "f1"),
    )
    cells = {
        ("a", "acc"): [0.90, 0.91, 0.92],
        ("b", "acc"): [0.80, 0.81, 0.82],  # a better by 0.1 >> std 0.01
        ("a", "rmse"): [2.0, 2.1, 2.2],
        ("b", "rmse"): [1.0, 1.1, 1.2],  # a's error is larger: worse
        ("a", "f1"): [0.5, 0.7, 0.9],
        ("b", "f1"): [0.6, 0.6, 0.6],  # difference 0.1 inside std 0.2
    }
    assert compare_rows("a", "b", cols, cells) == (
        "a vs b: better on acc; worse on rmse; within one std on f1."
    )
    assert compare_rows("a", "b", cols, {}) == "a vs b: nothing to compare."


def test_rows_sharing_overrides_share_runs():
    table = Table(
        name="t",
        title="t",
        config="cpu",
        seeds=(0, 1),
        rows=(Row("x", "x"), Row("y", "y"), Row("z", "z", (("k", 1),))),
        sections=(Section("s", (Column("c", "m", (("d", "a"),)),)),),
    )
    assert len(table.runs()) == 4  # (x and y share) + z, per seed
    assert overrides_for(table.rows[2], table.sections[0].columns[0]) == ("d='a'", "k=1")


def test_measured_throughput_gets_no_verdict():
    cols = (Column("acc", "acc"), Column("tokens/s", "tps", verdict=False))
    cells = {
        ("a", "acc"): [0.9, 0.91],
        ("b", "acc"): [0.8, 0.81],
        ("a", "tokens/s"): [100.0, 101.0],
        ("b", "tokens/s"): [50.0, 51.0],  # twice as fast, but machine load could decide it
    }
    assert compare_rows("a", "b", cols, cells) == "a vs b: better on acc."


def test_exact_cells_print_without_a_zero_spread():
    from shared.results import format_cell

    assert format_cell([1.5, 1.5, 1.5], 4) == "1.5000"  # bytes, a swept LR: one number
    assert format_cell([1.5, 1.5000001, 1.5], 4) == "1.5000 ± 0.0000"  # a real, tiny spread
    assert format_cell([1.0, 3.0], 1) == "2.0 ± 1.4"
    assert format_cell([2.0], 2) == "2.00"
    assert format_cell([], 2) == "–"
