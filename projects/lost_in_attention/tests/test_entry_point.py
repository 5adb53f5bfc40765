"""The smoke run through launch/run.py, the table renderers on its output, and the paper layout."""

import json

from projects.lost_in_attention import experiment, tables
from projects.lost_in_attention.questions import QTYPES
from projects.lost_in_attention.replacement import MODES


def test_smoke_run_measures_every_mode_and_layer_and_the_table_renders(smoke_run, tmp_path):
    proc, workdir = smoke_run("lost_in_attention")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    cfg = experiment.CONFIGS["smoke"]
    acc = json.loads((workdir / "accuracy.json").read_text())["accuracy"]
    assert set(acc) == set(MODES)
    assert len(acc["noise_all"]) == cfg.eval.noise_draws and len(acc["vanilla"]) == 1
    assert all(set(d) == set(QTYPES) for draws in acc.values() for d in draws)
    records = [json.loads(line) for line in (workdir / "geometry.jsonl").read_text().splitlines()]
    assert len(records) == cfg.eval.geometry_samples * cfg.model.num_layers * 2
    runs = {((), 0): workdir, ((), 1): workdir}
    md, data = tables.render_toy(tables.TOY, runs)
    assert "Table 1" in md and "Figure 1" in md and "majority answer" in md
    assert len(data["geometry"]["attn"]["rho"]) == cfg.model.num_layers
    paths = tables.toy_figures(tables.TOY, runs, tmp_path)
    assert all(p.exists() for p in paths)


def test_paper_layout_is_vicuna_7b_shaped():
    from flax import nnx

    from projects.lost_in_attention.text_model import LAYOUTS
    from shared.models.llama import Llama, count_params

    cfg = experiment.CONFIGS["paper"]
    layout = LAYOUTS[cfg.checkpoint.layout]
    n = count_params(nnx.eval_shape(lambda: Llama(layout, rngs=nnx.Rngs(0))))
    assert layout.dim == 4096 and layout.num_layers == 32 and layout.num_kv_heads == 32
    assert 6.7e9 < n < 6.8e9  # LLaMA-2-7B: 6.74B
    assert cfg.mesh_shape == (4, 2) and cfg.text.late_from < layout.num_layers
