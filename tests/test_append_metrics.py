import json

from shared.results import append_metrics


def _rows(tmp_path):
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


def test_a_rerun_unit_replaces_its_summary_row_and_keeps_the_others(tmp_path):
    append_metrics(tmp_path, {"phase": "a", "loss": 1.0})
    append_metrics(tmp_path, {"phase": "b", "loss": 2.0})
    append_metrics(tmp_path, {"phase": "a", "loss": 3.0})
    assert _rows(tmp_path) == [{"phase": "b", "loss": 2.0}, {"phase": "a", "loss": 3.0}]


def test_rows_with_a_step_are_all_kept(tmp_path):
    append_metrics(tmp_path, {"phase": "a", "loss": 1.0})
    for step in (1, 2, 2):
        append_metrics(tmp_path, {"phase": "rl", "step": step, "reward": float(step)})
    assert [r.get("step") for r in _rows(tmp_path)] == [None, 1, 2, 2]
