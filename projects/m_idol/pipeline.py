"""One run: for each seed, the seed's images, then every variant pretrained and evaluated.

Files written to the workdir:
- records.jsonl: one row per (seed, variant) with every metric of evaluate.py and the seconds;
- pca_<variant>.npz (first seed): 2-D PCA scores of the evaluation features and the modality;
- metrics.jsonl: the training loops' rows (loss terms, teacher entropies) and one row per record;
- checkpoints/<variant>_seed<s>/: each pretraining's checkpoint (a rerun resumes from it).
"""

from __future__ import annotations

import json
import pathlib
import time

import numpy as np
from tqdm.auto import tqdm

from projects.m_idol import data as data_lib
from projects.m_idol.evaluate import (
    pca_2d,
    representation_metrics,
    routing_metrics,
    split,
    teacher_outputs,
)
from projects.m_idol.train import pretrain
from shared.results import append_metrics
from shared.train import preemption


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    workdir = pathlib.Path(workdir)
    records = []
    bar = tqdm(total=len(cfg.seeds) * len(cfg.variants), desc="m_idol")
    with open(workdir / "records.jsonl", "w") as out:
        for seed in cfg.seeds:
            t0 = time.perf_counter()
            pool, ev = data_lib.load(cfg.data, seed, cfg.model.image_size)
            train_rows, test_rows = split(ev.modality, ev.fine, seed)
            data_s = time.perf_counter() - t0
            for variant in cfg.variants:
                t0 = time.perf_counter()
                name = f"{variant}_seed{seed}"
                pre = pretrain(pool.x, pool.modality, variant, cfg.model, cfg.train, cfg.crops,
                               seed, workdir, name)  # fmt: skip
                train_s = time.perf_counter() - t0
                z, expert, t_probs = teacher_outputs(pre.teacher, ev.x, pre.centres,
                                                     cfg.train.teacher_temp)  # fmt: skip
                rec = {"variant": variant, "seed": seed, "pool": len(pool.x),
                       "eval": len(ev.x), "train_s": train_s, "data_s": data_s}  # fmt: skip
                rec |= representation_metrics(
                    z, ev.modality, ev.fine, train_rows, test_rows, cfg.probe_cs
                )
                rec |= routing_metrics(expert, t_probs, ev.modality, pre.teacher.num_experts)
                rec["seconds"] = time.perf_counter() - t0
                if seed == cfg.seeds[0]:
                    np.savez(workdir / f"pca_{variant}.npz", pca=pca_2d(z), modality=ev.modality)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                records.append(rec)
                append_metrics(workdir, {"variant": variant, "seed": str(seed),
                                         **{k: v for k, v in rec.items() if k not in
                                            ("variant", "seed")}})  # fmt: skip
                preemption.check(f"the variant after {name}")
                bar.update()
    bar.close()
    metrics = {}
    for variant in cfg.variants:
        rows = [r for r in records if r["variant"] == variant]
        for k in rows[0]:
            if k not in ("variant", "seed") and isinstance(rows[0][k], int | float):
                metrics[f"{variant}/{k}"] = float(np.mean([r[k] for r in rows]))
    return metrics
