"""The smoke run through launch/run.py, the table renderer on its output, and the paper layout."""

import dataclasses
import json

from projects.algotrace import experiment, tables


def test_smoke_run_writes_both_analyses_and_the_table_renders(smoke_run, tmp_path):
    proc, workdir = smoke_run("algotrace")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    fv = json.loads((workdir / "fv.json").read_text())
    prim = json.loads((workdir / "primitives.json").read_text())
    cfg = experiment.CONFIGS["smoke"]
    assert set(fv["tasks"]) == {"increment", "reverse2", "copy_first", "successor"}
    assert len(fv["heads"]) == cfg.fv.top_heads
    assert len(prim["sweep"]["check/fv"]) == len(cfg.primitives.alphas)
    assert prim["sweep"]["check/fv"][cfg.primitives.alphas.index(0.0)] == prim["base"]
    md, _ = tables.render_toy(tables.TOY, {((), 0): workdir, ((), 1): workdir})
    assert "Table 1" in md and "Table 2" in md and "additivity ratio" in md
    paths = tables.toy_figures(tables.TOY, {((), 0): workdir}, tmp_path)
    assert all(p.exists() for p in paths)


def test_paper_layout_is_llama_3_8b_shaped():
    from flax import nnx

    from projects.algotrace.pipeline import build_model
    from shared.models.llama import count_params

    cfg = experiment.CONFIGS["paper"]

    def params(layers):
        c = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, size="llama-3.1-8b"))
        m = nnx.eval_shape(lambda: build_model(c, 0))
        return count_params(m), m.cfg

    n, layout = params(32)
    assert layout.dim == 4096 and layout.num_layers == 32 and layout.num_kv_heads == 8
    assert 6.9e9 < n < 7.1e9  # 8.03B less the 128256-token embedding and head
