"""Primitives in navigation traces (Figures 2-3, Table 2, cross-task check).

Reconstruction (the paper gives only the abstract-level pipeline):
- clusters: k-means (k = 8, fixed seed, k-means++ init) of the residual stream entering block
  `cluster_layer` at every generated token of unsteered traces, labelled by the tagger;
- v_P (FV-style): ā at the final token of clean prefixes, i.e. reference-trace prefixes that end
  just before the decision word of a P step ("check" or "back"); CIE on corrupted prefixes,
  which end just before a "go" decision of the same traces (a context whose next step is not
  P), on P(P's word); FV = Σ over the top-k heads of o_proj(ā). Alternatives considered: the
  spec's "step labels shuffled" corruption leaves check prefixes unchanged (their earlier steps
  are all "go"), so it gives no contrast;
- v_P^mean = mean(h_ℓ | tokens of P steps) − mean(h_ℓ | all trace tokens) on reference traces;
- injection: α·v added to the residual entering block `inject_layer` at the prompt's last
  token and at every generated token.
"""

from __future__ import annotations

import pathlib

import numpy as np

from projects.algotrace import fv, tagger, tasks
from projects.algotrace.kmeans import kmeans, purity

PRIMS = ("check", "back")


def _navigation(n: int, rng, detour_p: float = tasks.DETOUR_P) -> list[tasks.GraphInstance]:
    return [tasks.graph_instance(rng, detour_p) for _ in range(n)]


def generate_traces(model, insts, max_new, **steer):
    """(generated words per instance, prompt + generated tokens [B, T], pads [B])."""
    tok, pads = fv.pad_batch([tasks.encode(i.prompt()) for i in insts])
    out = fv.generate(model, tok, pads, max_new, where="all", **steer)
    return [tasks.decode(o) for o in out], np.concatenate([tok, out], 1), pads


def trace_stats(model, insts, words, buf, pads) -> dict[str, float]:
    """Primitive frequency (tagged steps per 100 generated tokens), path validity, task
    success and perplexity of the generated tokens under the unsteered model."""
    nll = fv.token_nll(model, buf, pads)
    t0 = buf.shape[1] - len(words[0])
    counts = {p: 0 for p in tagger.LABELS}
    tokens, nll_sum, valid, success = 0, 0.0, 0, 0
    for i, (inst, w) in enumerate(zip(insts, words)):
        n = tagger.generated_length(w)
        tokens += n
        nll_sum += float(nll[i, t0 - 1 : t0 - 1 + n].sum())
        for k, v in tagger.count_steps(w).items():
            counts[k] += v
        valid += tagger.path_valid(w, inst.edges, inst.start)
        success += tagger.task_success(w, inst.edges, inst.start, inst.target)
    out = {f"freq_{p}": 100.0 * counts[p] / tokens for p in ("check", "back", "path", "other")}
    out.update(validity=valid / len(insts), success=success / len(insts),
               ppl=float(np.exp(nll_sum / tokens)), tokens=tokens / len(insts))  # fmt: skip
    return out


def decision_prefixes(insts) -> dict[str, list[list[int]]]:
    """Reference-trace prefixes ending just before each decision word, by that word."""
    out = {w: [] for w in tasks.STEP_WORDS}
    for inst in insts:
        seq = inst.prompt() + inst.trace()
        for i, w in enumerate(seq):
            if w in tasks.STEP_WORDS:
                out[w].append(tasks.encode(seq[:i]))
    return out


def primitive_vectors(model, cfg, insts, rng) -> dict:
    """v_P and v_P^mean for each primitive P, with the AIE of the heads."""
    pc, k = cfg.primitives, min(cfg.fv.top_heads, model.cfg.num_layers * model.cfg.num_heads)
    pre = decision_prefixes(insts)
    corrupt = [pre["go"][i] for i in rng.permutation(len(pre["go"]))[: cfg.fv.trials]]
    seqs = [tasks.encode(i.prompt() + i.trace()) for i in insts]
    tok, pads = fv.pad_batch(seqs)
    resid = []
    for b in range(0, len(tok), 64):
        _, cap = fv.run_traced(model, tok[b : b + 64], pads[b : b + 64])
        resid.append(np.asarray(cap["resid_pre"][pc.inject_layer]))
    resid = np.concatenate(resid)  # [B, T, D]
    labels = np.full(tok.shape, "", object)
    for r, inst in enumerate(insts):
        n = len(inst.trace())
        labels[r, tok.shape[1] - n :] = tagger.token_labels(tasks.decode(tok[r, -n:]))
    in_trace = labels != ""
    out = {}
    for p in PRIMS:
        clean = pre[p][: cfg.fv.mean_prompts]
        mean = fv.mean_head_outputs(model, *fv.pad_batch(clean))
        targets = np.full(len(corrupt), tasks.ID[p])
        aie = fv.causal_indirect_effects(model, *fv.pad_batch(corrupt), targets, mean).mean(-1)
        heads = fv.top_heads(aie, k)
        diff = resid[labels == p].mean(0) - resid[in_trace].mean(0)
        out[p] = {"fv": fv.function_vector(model, mean, heads), "mean": diff,
                  "aie": aie.tolist(), "heads": heads, "clean_prefixes": len(clean)}  # fmt: skip
    return out


def clusters(model, cfg, insts, words, buf, pads) -> dict:
    """k-means of the cluster-layer residuals at generated tokens vs tagger labels."""
    pc = cfg.primitives
    _, cap = fv.run_traced(model, buf, pads)
    resid = np.asarray(cap["resid_pre"][pc.cluster_layer])  # [B, T, D]
    t0 = buf.shape[1] - len(words[0])
    xs, ys = [], []
    for i, w in enumerate(words):
        n = tagger.generated_length(w)
        labs = tagger.token_labels(w)[:n]
        # the residual at position t predicts token t + 1: take the one that produced each token
        xs.append(resid[i, t0 - 1 : t0 - 1 + n])
        ys += labs
    x, y = np.concatenate(xs), np.asarray(ys)
    assign, _ = kmeans(x, pc.clusters, seed=0)
    pur, table = purity(assign, y)
    _, counts = np.unique(y, return_counts=True)
    centered = x - x.mean(0)
    pcs = np.linalg.svd(centered, full_matrices=False)[2][:2]
    keep = np.random.default_rng(0).permutation(len(x))[:1500]
    return {"purity": pur, "majority_baseline": float(counts.max() / len(y)), "table": table,
            "points": (centered[keep] @ pcs.T).tolist(), "point_labels": y[keep].tolist(),
            "point_clusters": assign[keep].tolist()}  # fmt: skip


def run_primitives(model, cfg, workdir: pathlib.Path) -> dict:
    pc = cfg.primitives
    rng = np.random.default_rng(cfg.seed + 2)
    # half of the reference traces take every detour they can, so "back" has prefixes
    half = pc.vector_prompts // 2
    ref = _navigation(pc.vector_prompts - half, rng) + _navigation(half, rng, detour_p=1.0)
    test = _navigation(pc.prompts, rng)
    vecs = primitive_vectors(model, cfg, ref, rng)
    words, buf, pads = generate_traces(model, test, pc.max_new)
    base = trace_stats(model, test, words, buf, pads)
    out = {"base": base, "clusters": clusters(model, cfg, test, words, buf, pads),
           "vectors": {p: {k: v for k, v in d.items() if k not in ("fv", "mean")}
                       for p, d in vecs.items()},
           "norms": {f"{p}/{kind}": float(np.linalg.norm(vecs[p][kind]))
                     for p in PRIMS for kind in ("fv", "mean")},
           "sweep": {}, "metrics": {}, "alphas": list(pc.alphas)}  # fmt: skip

    def stats(vector, alpha):
        if alpha == 0:
            return base
        w, b, pd = generate_traces(
            model, test, pc.max_new, vector=vector, layer=pc.inject_layer, alpha=alpha
        )
        return trace_stats(model, test, w, b, pd)

    for p in PRIMS:
        for kind in ("fv", "mean"):
            out["sweep"][f"{p}/{kind}"] = [stats(vecs[p][kind], a) for a in pc.alphas]
    a = pc.compose_alpha
    comp = {"P": stats(vecs["check"]["fv"], a), "Q": stats(vecs["back"]["fv"], a),
            "P+Q": stats(vecs["check"]["fv"] + vecs["back"]["fv"], a)}  # fmt: skip
    out["composition"] = comp
    m = out["metrics"]
    m["purity"] = out["clusters"]["purity"]
    m["majority_baseline"] = out["clusters"]["majority_baseline"]
    for key in ("freq_check", "freq_back", "validity", "success", "ppl"):
        m[f"base/{key}"] = base[key]
    for name, st in comp.items():
        for prim in PRIMS:
            m[f"compose/{name}/d_{prim}"] = st[f"freq_{prim}"] - base[f"freq_{prim}"]
    out["cross_task"] = cross_task(model, cfg, vecs["check"]["fv"], rng)
    m.update({f"cross/{k}": v for k, v in out["cross_task"].items()})
    return out


def cross_task(model, cfg, vector, rng) -> dict:
    """The navigation "check" vector injected at the last token of 10-shot ICL prompts:
    accuracy with and without it, and how often the first answer token becomes "check"."""
    from projects.algotrace.toy_fv import _prompts

    pc = cfg.primitives
    out = {}
    for task in tasks.ICL_TASKS:
        rows, answers = _prompts(task, pc.prompts, cfg.fv.shots, rng)
        tok, pads = fv.pad_batch(rows)
        n = max(len(x) for x in answers)
        for name, alpha in (("plain", 0.0), ("check", pc.compose_alpha)):
            gen = fv.generate(model, tok, pads, n, vector=vector, layer=pc.inject_layer,
                              alpha=alpha)  # fmt: skip
            out[f"{task}/{name}_acc"] = float(
                np.mean([list(g[: len(x)]) == list(x) for g, x in zip(gen, answers)])
            )
            out[f"{task}/{name}_check_rate"] = float(np.mean(gen[:, 0] == tasks.ID["check"]))
    return out
