"""One run: features once, then every seed x (method, ablation); records to methods.jsonl."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

import numpy as np
from tqdm.auto import tqdm

from projects.hypcl.continual import make_stream, run_method, summarize
from shared.results import append_metrics


def features(cfg):
    """(train, test, text, info) of the configured setting."""
    if cfg.setting == "synthetic":
        from projects.hypcl.synthetic import make_features

        return (*make_features(cfg.synthetic), {})
    if cfg.setting == "mnist":
        from projects.hypcl.toy_clip import make_features, prompts
        from shared.models.pretrained.minilm import encode_sentences

        text = encode_sentences(list(prompts()))
        train, test, info = make_features(cfg.toy_clip, text)
        return train, test, text, info
    from projects.hypcl.features import load_features

    return (*load_features(cfg.features_dir), {})


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    t0 = time.perf_counter()
    train, test, text, info = features(cfg)
    info |= {"setting": cfg.setting, "num_tasks": cfg.num_tasks, "classes": len(text),
             "dim": int(train.f.shape[1]), "train": len(train.y), "test": len(test.y),
             "features_s": time.perf_counter() - t0}  # fmt: skip
    (workdir / "setting.json").write_text(json.dumps(info, indent=1))
    from projects.hypcl.experiment import ABLATIONS

    jobs = [(m, m, cfg.learner) for m in cfg.methods]
    jobs += [(a, "hypcl_a", dataclasses.replace(cfg.learner, **dict(ABLATIONS[a])))
             for a in cfg.ablations]  # fmt: skip
    records = []
    with open(workdir / "methods.jsonl", "w") as out:
        bar = tqdm(total=len(cfg.seeds) * len(jobs), desc="hypcl")
        for seed in cfg.seeds:
            stream = make_stream(train, test, text, cfg.num_tasks, seed)
            for name, method, learner in jobs:
                t = time.perf_counter()
                history = run_method(method, stream, learner, seed)
                rec = {"system": name, "seed": seed, **summarize(history, stream.tasks),
                       "a_t": [float(np.nanmean(h)) for h in history],
                       "seconds": time.perf_counter() - t}  # fmt: skip
                out.write(json.dumps(rec) + "\n")
                out.flush()
                records.append(rec)
                summary = {k: rec[k] for k in ("last", "avg", "forgetting")}
                append_metrics(workdir, {"system": name, "seed": str(seed), **summary})
                bar.update()
        bar.close()
    metrics = {}
    for name in dict.fromkeys(r["system"] for r in records):
        for k in ("last", "avg", "forgetting"):
            metrics[f"{name}/{k}"] = float(np.mean([r[k] for r in records if r["system"] == name]))
    return metrics
