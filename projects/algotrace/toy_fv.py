"""Table 1 and Figure 1 for the trained decoder: per ICL task, accuracy zero-shot, 10-shot,
zero-shot + FV (α = 1, layer picked on separate dev prompts), zero-shot + a random vector of
the FV's norm; AIE per (layer, head) and the accuracy of every injection layer."""

from __future__ import annotations

import numpy as np

from projects.algotrace import fv, tasks


def _prompts(task, n, shots, rng, corrupt=False):
    """(token lists, answers as id lists) of n prompts with `shots` demonstrations."""
    rows, answers = [], []
    for _ in range(n):
        pairs = [tasks.icl_pair(task, rng) for _ in range(shots + 1)]
        demos = tasks.shuffle_labels(pairs[:-1], rng) if corrupt else pairs[:-1]
        rows.append(tasks.encode(tasks.icl_prompt(demos, pairs[-1][0])))
        answers.append(tasks.encode(pairs[-1][1]))
    return rows, answers


def accuracy(model, rows, answers, **steer) -> float:
    """Exact match of the greedy answer tokens."""
    tok, pads = fv.pad_batch(rows)
    n = max(len(a) for a in answers)
    out = fv.generate(model, tok, pads, n, **steer)
    return float(np.mean([list(o[: len(a)]) == list(a) for o, a in zip(out, answers)]))


def task_vectors(model, cfg, rng):
    """Per task: ā [L, N, H] and CIE [L, N, trials]; heads by AIE averaged over the tasks."""
    c = cfg.fv
    means, cies = {}, {}
    for task in tasks.ICL_TASKS:
        rows, _ = _prompts(task, c.mean_prompts, c.shots, rng)
        means[task] = fv.mean_head_outputs(model, *fv.pad_batch(rows))
        rows, answers = _prompts(task, c.trials, c.shots, rng, corrupt=True)
        targets = np.asarray([a[0] for a in answers])
        cies[task] = fv.causal_indirect_effects(model, *fv.pad_batch(rows), targets, means[task])
    return means, cies


def run_toy_fv(model, cfg) -> dict:
    rng = np.random.default_rng(cfg.seed + 1)
    c = cfg.fv
    nl = model.cfg.num_layers
    means, cies = task_vectors(model, cfg, rng)
    aie_task = {t: cies[t].mean(-1) for t in tasks.ICL_TASKS}
    aie = np.mean([aie_task[t] for t in tasks.ICL_TASKS], axis=0)  # universal heads (Todd)
    heads = fv.top_heads(aie, min(c.top_heads, aie.size))
    out = {"aie": aie.tolist(), "aie_task": {t: a.tolist() for t, a in aie_task.items()},
           "heads": heads, "tasks": {}, "metrics": {}}  # fmt: skip
    share = np.sort(np.clip(aie.ravel(), 0, None))[::-1]
    out["metrics"]["aie_top3_share"] = float(share[:3].sum() / max(share.sum(), 1e-12))
    for task in tasks.ICL_TASKS:
        vec = fv.function_vector(model, means[task], heads)
        rand = rng.normal(size=vec.shape).astype(np.float32)
        rand *= np.linalg.norm(vec) / np.linalg.norm(rand)
        dev = _prompts(task, c.dev_prompts, 0, rng)
        test0 = _prompts(task, c.eval_prompts, 0, rng)
        testk = _prompts(task, c.eval_prompts, c.shots, rng)
        dev_curve = [accuracy(model, *dev, vector=vec, layer=li, alpha=1.0) for li in range(nl)]
        test_curve = [accuracy(model, *test0, vector=vec, layer=li, alpha=1.0) for li in range(nl)]
        best = int(np.argmax(dev_curve))
        row = {
            "zero_shot": accuracy(model, *test0),
            "icl": accuracy(model, *testk),
            "fv": test_curve[best],
            "random": accuracy(model, *test0, vector=rand, layer=best, alpha=1.0),
            "best_layer": best,
            "fv_norm": float(np.linalg.norm(vec)),
        }
        out["tasks"][task] = {**row, "dev_curve": dev_curve, "test_curve": test_curve}
        out["metrics"].update({f"{task}/{k}": v for k, v in row.items()})
    return out
