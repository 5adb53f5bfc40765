"""A table of bad invocations of `launch/run.py` across projects: each must end with exactly one
line on stderr, `error: ...`, that names the offending key (or path, or project) and says what is
allowed, with a non-zero exit and no traceback. They run through the entry point's `main` in this
process (none of them gets as far as training); two run as real subprocesses to check the exit
code and stream as a shell sees them."""

import dataclasses
import importlib.util
import json
import subprocess
import sys

import pytest

from shared import executor
from shared.config import dumps
from shared.train import preemption

RUN_PY = executor.ROOT / "launch" / "run.py"
_spec = importlib.util.spec_from_file_location("launch_run", RUN_PY)
run_py = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_py)

# (project, config, extra arguments, words the error line must contain)
BAD = [
    # learning rates: non-finite, zero, negative, wrong type
    ("scale", "smoke", ["--set", "lr=nan"], ["lr=nan", "finite"]),
    ("scale", "smoke", ["--set", "lr=inf"], ["lr=inf", "finite"]),
    ("scale", "smoke", ["--set", "adam_lr=-1e-3"], ["adam_lr=-0.001", ">"]),
    ("var_jepa", "smoke", ["--set", "pretrain.lr=nan"], ["pretrain.lr=nan", "finite"]),
    ("var_jepa", "smoke", ["--set", "pretrain.lr=0"], ["pretrain.lr=0", "> 0"]),
    ("teamwork", "smoke", ["--set", "train.lr=-inf"], ["train.lr=-inf", "finite"]),
    ("attn_qat", "smoke", ["--set", "finetune.lr=0"], ["finetune.lr=0", "> 0"]),
    ("neg_sampling", "smoke", ["--set", "train.lr='fast'"], ["train.lr='fast'", "number"]),
    # sizes and steps
    ("scale", "smoke", ["--set", "dim=-32"], ["dim=-32", ">= 1"]),
    ("scale", "smoke", ["--set", "steps=0"], ["steps=0", ">= 1"]),
    ("scale", "smoke", ["--set", "batch_size=-8"], ["batch_size=-8", ">= 1"]),
    ("scale", "smoke", ["--set", "dim=33"], ["dim=33", "num_heads"]),
    ("teamwork", "smoke", ["--set", "train.batch_size=-8"], ["train.batch_size=-8", ">= 1"]),
    ("teamwork", "smoke", ["--set", "train.steps=0"], ["train.steps=0", ">= 1"]),
    ("teamwork", "smoke", ["--set", "model.d_model=0"], ["model.d_model=0", ">= 1"]),
    ("var_jepa", "smoke", ["--set", "pretrain.steps=-5"], ["pretrain.steps=-5", ">= 1"]),
    ("var_jepa", "smoke", ["--set", "model.hidden_dim=0"], ["model.hidden_dim=0", ">= 1"]),
    ("var_jepa", "smoke", ["--set", "probe.mlp.hidden=(16, 0)"], ["probe.mlp.hidden[1]=0"]),
    ("attn_qat", "smoke", ["--set", "data.seq_len=-1"], ["data.seq_len=-1", ">= 1"]),
    ("neg_sampling", "smoke", ["--set", "train.epochs=0"], ["train.epochs=0", ">= 1"]),
    ("neg_sampling", "smoke", ["--set", "synthetic.num_users=-3"], ["synthetic.num_users"]),
    ("paso", "smoke", ["--set", "mnist_mlp.steps=0"], ["mnist_mlp.steps=0", ">= 1"]),
    ("paso", "smoke", ["--set", "windows=(4, -8)"], ["windows[1]=-8", ">= 1"]),
    ("shaped_ope", "smoke", ["--set", "reps=1"], ["reps=1", ">= 2"]),
    ("td_exp_step", "smoke", ["--set", "horizons=(100, 0)"], ["horizons[1]=0", ">= 1"]),
    ("scale_continuous_gnn", "smoke", ["--set", "train.epochs=-1"], ["train.epochs=-1"]),
    ("scale_continuous_gnn", "smoke", ["--set", "train.batch_size=0"], ["train.batch_size=0"]),
    # intervals
    ("var_jepa", "smoke", ["--set", "pretrain.checkpoint_every=-1"], ["checkpoint_every=-1"]),
    ("var_jepa", "smoke", ["--set", "pretrain.log_every=0"], ["pretrain.log_every=0", ">= 1"]),
    ("teamwork", "smoke", ["--set", "train.checkpoint_every=-5"], ["train.checkpoint_every"]),
    ("scale", "smoke", ["--set", "eval_every=-1"], ["eval_every=-1", ">= 0"]),
    ("attn_qat", "smoke", ["--set", "finetune.checkpoint_every=-1"], ["checkpoint_every=-1"]),
    # shares and probabilities
    ("var_jepa", "smoke", ["--set", "model.dropout=1.5"], ["model.dropout=1.5", "<= 1"]),
    ("teamwork", "smoke", ["--set", "train.mask_ratio=2.0"], ["train.mask_ratio=2.0"]),
    ("td_exp_step", "smoke", ["--set", "garnet.gamma=1.0"], ["garnet.gamma=1.0", "< 1"]),
    # choices, unknown keys, malformed values
    ("var_jepa", "smoke", ["--set", "data.name='nope'"], ["data.name", "nope"]),
    ("scale", "smoke", ["--set", "optimizer='sgd2'"], ["optimizer='sgd2'", "'adamw'"]),
    ("scale", "smoke", ["--set", "data='c5'"], ["data='c5'", "'wikipedia'"]),
    ("teamwork", "smoke", ["--set", "benchmark='smd2'"], ["benchmark='smd2'", "'synthetic'"]),
    ("var_jepa", "smoke", ["--set", "model.hidden=3"], ["unknown config key 'model.hidden'"]),
    ("scale", "smoke", ["--set", "stpes=10"], ["unknown config key 'stpes'", "steps"]),
    ("scale", "smoke", ["--set", "steps"], ["'steps'", "key=value"]),
    ("scale", "smoke", ["--set", "steps=1.5"], ["steps=1.5", "integer"]),
    ("var_jepa", "smoke", ["--set", "pretrain=3"], ["pretrain", "group"]),
    ("scale", "smoke", ["--set", "sweep_lrs=(1,"], ["sweep_lrs", "tuple"]),
    ("scale", "smoke", ["--seed", "-1"], ["seed=-1", ">= 0"]),
    ("scale", "smoke", ["--seed", "x"], ["--seed", "invalid int"]),
    ("attn_qat", "smoke", ["--set", "variants=('nope',)"], ["variants=('nope',)", "attn_qat"]),
    # projects, configs, command line
    ("nope", "smoke", [], ["unknown project", "projects/var_jepa"]),
    ("scale", "huge", [], ["no config 'huge'", "smoke"]),
    ("scale", "smoke", ["--bogus"], ["unrecognized arguments: --bogus"]),
]


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


def call(argv: list[str]) -> int:
    try:
        return run_py.main(argv)
    except SystemExit as e:  # argparse and the project registry exit with their message
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 1
        return e.code


@pytest.fixture(autouse=True)
def _no_process_wide_handler(monkeypatch):
    """main() would install the SIGTERM flag for the whole pytest worker."""
    monkeypatch.setattr(preemption, "install", lambda: None)


@pytest.mark.parametrize("project, config, extra, words", BAD, ids=[" ".join(b[2]) for b in BAD])
def test_a_bad_invocation_fails_with_one_clear_line(project, config, extra, words, capsys):
    code = call([f"projects/{project}", "--config", config, *extra])
    line = error_line(capsys)
    assert code != 0
    for w in words:
        assert w in line, line


def test_there_are_at_least_43_kinds_across_projects():
    assert len(BAD) >= 43 and len({b[0] for b in BAD}) >= 9


@pytest.mark.parametrize(
    "setup, extra, words",
    [
        ("file", [], ["is a file", "give a directory"]),
        ("under_file", [], ["not a writable directory"]),
        ("other_project", [], ["holds a run of project 'scale'", "--force-new"]),
        ("other_config", [], ["another config", "lr: 0.01 there, 0.03 now", "--force-new"]),
        ("not_a_run", ["--force-new"], ["not a run directory", "nothing was deleted"]),
    ],
)
def test_a_bad_workdir_fails_with_one_clear_line(setup, extra, words, tmp_path, capsys):
    workdir = tmp_path / "w"
    project = "var_jepa" if setup == "other_project" else "scale"
    if setup == "file":
        workdir.write_text("")
    elif setup == "under_file":
        (tmp_path / "f").write_text("")
        workdir = tmp_path / "f" / "w"
    elif setup == "other_project":
        workdir.mkdir()
        (workdir / "run.json").write_text(json.dumps({"project": "scale"}))
    elif setup == "other_config":
        workdir.mkdir()
        cfg = executor.get_config("scale", "smoke")
        (workdir / "config.json").write_text(dumps(cfg).replace('"lr": 0.03', '"lr": 0.01'))
    elif setup == "not_a_run":
        workdir.mkdir()
        (workdir / "notes.txt").write_text("mine")
    code = call([f"projects/{project}", "--config", "smoke", "--workdir", str(workdir), *extra])
    line = error_line(capsys)
    assert code != 0
    for w in words:
        assert w in line, line
    if setup == "not_a_run":
        assert (workdir / "notes.txt").read_text() == "mine"


def test_debug_shows_the_traceback(capsys):
    with pytest.raises(Exception, match="lr=nan must be a finite number"):
        run_py.main(["projects/scale", "--config", "smoke", "--set", "lr=nan", "--debug"])


def test_show_config_prints_every_field_with_its_default(capsys):
    assert run_py.main(["projects/scale", "--config", "smoke", "--show-config"]) == 0
    out = capsys.readouterr().out
    assert "steps = 6  # default 150" in out and "optimizer = 'scale'\n" in out
    fields = dataclasses.fields(executor.get_config("scale", "smoke"))
    assert len([line for line in out.splitlines() if " = " in line]) == len(fields)


@pytest.mark.parametrize(
    "extra, code, words",
    [
        (["--set", "pretrain.steps=-5"], 2, "error: pretrain.steps=-5 is out of range"),
        (["--set", "data.name='csv:jannis'", "--set", "data.data_dir='/nowhere'"], 1, "jannis"),
    ],
)
def test_the_exit_code_and_stderr_as_a_shell_sees_them(extra, code, words):
    proc = subprocess.run(
        [sys.executable, str(RUN_PY), "projects/var_jepa", "--config", "smoke", *extra],
        cwd=executor.ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == code, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], proc.stderr
