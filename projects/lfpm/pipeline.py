"""One run = one seed: pretrain θ_0, fine-tune every task (the attacked task as BadMerging, no-FI
and clean), merge with TA and TIES at every λ, apply every defense to each merge, evaluate.

Files written to the workdir:
- records.jsonl: one row per (attack variant, merge, λ, defense) and per individual model, with
  CA per task on clean test inputs, their mean, and ASR on the attacked task;
- path.jsonl: Figure 2, ASR and mean CA of θ_m + s·τ_a along s for LFPM single and path;
- ctl.json: Figure 1, the CTL relative error per layer and α for pairs of fine-tuned models;
- timing.json: seconds per phase; metrics.jsonl: every cell and phase time as it is done.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import time

import jax
import numpy as np

from projects.lfpm import ctl
from projects.lfpm import tasks as tasks_lib
from projects.lfpm.defenses import Defenses
from projects.lfpm.finetune import Finetuner
from projects.lfpm.model import Delta, Encoder, Evaluator, at, attack_success_rate, build_encoder
from shared.models import merging
from shared.results import append_metrics
from shared.train import preemption
from shared.train.label_free import PretrainConfig, pretrain

# Merges jitted whole: op by op, every eager operation on every leaf shape compiles on its own.
_task_arithmetic = jax.jit(merging.task_arithmetic)
_ties_merge = jax.jit(merging.ties_merge, static_argnames="keep")


def load_tasks(cfg) -> list[tasks_lib.Task]:
    d = cfg.data
    if d.source == "mnist":
        return tasks_lib.mnist_tasks(cfg.seed, d.train_per_task, d.test_per_task,
                                     d.clean_fraction)  # fmt: skip
    return [tasks_lib.load_local_task(d.data_dir, name, d.train_per_task, d.test_per_task,
                                      d.clean_fraction, cfg.seed) for name in d.tasks]  # fmt: skip


def pretrain_images(cfg, tasks) -> np.ndarray:
    d = cfg.data
    if d.source == "mnist":
        return tasks_lib.mnist_pretrain_images(cfg.seed, d.pretrain_per_source)
    return np.concatenate([t.x_train[: d.pretrain_per_source] for t in tasks])


class Scorer:
    """CA per task and ASR of a deployed encoder with the tasks' own heads."""

    def __init__(self, evaluator: Evaluator, tasks, attacked: int, attack):
        self.ev, self.tasks, self.attacked, self.target = evaluator, tasks, attacked, attack.target
        t = tasks[attacked]
        self.x_bd = tasks_lib.triggered(t.x_test, attack.trigger_size)
        self.y_bd = t.y_test

    def __call__(self, theta, heads) -> dict[str, float]:
        out = {f"ca_{t.name}": self.ev.accuracy(theta, h, t.x_test, t.y_test)
               for t, h in zip(self.tasks, heads)}  # fmt: skip
        out["ca_mean"] = float(np.mean(list(out.values())))
        pred = self.ev.predict(theta, heads[self.attacked], self.x_bd)
        out["asr"] = attack_success_rate(pred, self.y_bd, self.target)
        return out


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    workdir = pathlib.Path(workdir)
    t_start, timing = time.perf_counter(), {}

    def lap(name):
        timing[name] = round(time.perf_counter() - t_start - sum(timing.values()), 2)
        append_metrics(workdir, {"phase": name, "seconds": timing[name]})
        preemption.check(f"the phase after {name}")
        print(f"[lfpm seed {cfg.seed} {cfg.finetune}] {name}: {timing[name]:.1f} s", flush=True)

    root = jax.random.key(cfg.seed)
    keys = {n: jax.random.fold_in(root, i) for i, n in enumerate(
        ("init", "pretrain", "finetune", "attack", "defense", "negation"))}  # fmt: skip
    tasks = load_tasks(cfg)
    names = [t.name for t in tasks]
    attacked = names.index(cfg.data.attacked)
    module = build_encoder(cfg.encoder, tasks[0].x_train.shape[1:], keys["init"])
    lap("data")
    if cfg.pretrain.steps:
        pre = PretrainConfig(objective="autoencoder", steps=cfg.pretrain.steps,
                             batch_size=cfg.pretrain.batch_size, lr=cfg.pretrain.lr)  # fmt: skip
        pretrain(module, pretrain_images(cfg, tasks), pre, keys["pretrain"])
    encoder = Encoder(module)
    theta0 = encoder.init_params
    lap("pretrain")

    delta = Delta(cfg.finetune, theta0, cfg.fine.lora_rank)
    tuner = Finetuner(encoder, delta, cfg.fine, cfg.attack)
    taus, heads = {}, {}
    for i, t in enumerate(tasks):
        k = jax.random.fold_in(keys["finetune"], i)
        if i == attacked:
            heads[t.name] = tuner.fit_head(theta0, t.x_train, t.y_train, t.num_classes, k)
        else:
            taus[t.name], heads[t.name] = tuner.clean_task(
                theta0, t.x_train, t.y_train, t.num_classes, k, t.name
            )
    t = tasks[attacked]
    variants = {"badmerging": (cfg.attack.r_min, cfg.attack.alpha),
                "nofi": (1.0, cfg.attack.alpha), "clean": (1.0, 0.0)}  # fmt: skip
    attack_taus = {}
    for j, v in enumerate(cfg.attack.variants):
        r_min, alpha = variants[v]
        k = jax.random.fold_in(keys["attack"], j)
        attack_taus[v] = tuner.attacked_task(
            theta0, heads[t.name], t.x_train, t.y_train, r_min, alpha, k, v
        )
    head_list = [heads[n] for n in names]
    lap("finetune")

    scorer = Scorer(Evaluator(encoder), tasks, attacked, cfg.attack)
    records: list[dict] = []

    def record(**row):
        row = {"seed": cfg.seed, "finetune": cfg.finetune, **row}
        records.append(row)
        with (workdir / "records.jsonl").open("a") as f:
            f.write(json.dumps(row) + "\n")
        cell = f"{row['attack']}/{row['merge']}/lam{row['lam']}/{row['defense']}"
        append_metrics(workdir, {"cell": cell, **{k: v for k, v in row.items()
                                                  if isinstance(v, float)}})  # fmt: skip

    (workdir / "records.jsonl").write_text("")
    record(attack="-", merge="pretrained", lam=0.0, defense="none", **scorer(theta0, head_list))
    for name in names:  # each fine-tuned model alone (its own CA; ASR through the attacked head)
        for v in cfg.attack.variants if name == t.name else ("-",):
            tau = attack_taus[v] if name == t.name else taus[name]
            record(attack=v, merge=f"individual:{name}", lam=1.0, defense="none",
                   **scorer(at(theta0, tau), head_list))  # fmt: skip
    lap("individual")

    defenses = Defenses(encoder, delta, cfg.defense, cfg.attack, attacked)
    clean_sets = [(x.x_clean, x.y_clean) for x in tasks]
    tau_neg = None
    if "negation" in cfg.defense.defenses and cfg.defense.defend:
        tau_neg = defenses.negation_vector(theta0, head_list, clean_sets, keys["negation"])
    path_taus: dict[str, object] = {}
    metrics: dict[str, float] = {}
    fig = cfg.figure
    for v in cfg.attack.variants:
        vectors = [attack_taus[v] if n == t.name else taus[n] for n in names]
        for method, lam in itertools.product(cfg.merge.methods, cfg.merge.lams):
            if method == "ta":
                theta_m = _task_arithmetic(theta0, vectors, lam)
            else:
                theta_m = _ties_merge(theta0, vectors, lam, keep=cfg.merge.ties_keep)
            preemption.check(f"merge {v}/{method}/λ={lam}")
            todo = cfg.defense.defenses if v in cfg.defense.defend else ("none",)
            for d_i, d in enumerate(todo):
                k = jax.random.fold_in(keys["defense"], d_i)
                deployed, trained = defenses.apply(d, theta0, theta_m, head_list, clean_sets, k,
                                                   tau_neg)  # fmt: skip
                scores = scorer(deployed, head_list)
                record(attack=v, merge=method, lam=lam, defense=d, **scores)
                for m, value in scores.items():
                    metrics[f"{v}/{method}/lam{lam}/{d}/{m}"] = value
                if (v, method, lam) == ("badmerging", fig.path_method, fig.path_lam) and (
                    d.startswith("lfpm")
                ):
                    path_taus[d] = (theta_m, trained)
        lap(f"merge+defend {v}")

    with (workdir / "path.jsonl").open("w") as f:
        for d, (theta_m, tau_a) in path_taus.items():
            for s in np.linspace(0.0, 1.0, fig.path_grid):
                scores = scorer(at(theta_m, tau_a, float(s)), head_list)
                f.write(json.dumps({"seed": cfg.seed, "finetune": cfg.finetune, "defense": d,
                                    "s": round(float(s), 6), **scores}) + "\n")  # fmt: skip
    lap("path")

    tau_attacked = attack_taus.get("badmerging", next(iter(attack_taus.values())))
    models = {n: at(theta0, tau_attacked if n == t.name else taus[n]) for n in names[:3]}
    probes = {x.name: x.x_test[: fig.ctl_probe] for x in tasks[:3]}
    pairs = list(itertools.combinations(names[:3], 2))
    errs = ctl.pair_errors(encoder.layer_features, models, pairs, probes, fig.ctl_alphas)
    (workdir / "ctl.json").write_text(json.dumps({"alphas": list(fig.ctl_alphas),
                                                  "pairs": errs}, indent=1))  # fmt: skip
    for pair, layers in errs.items():
        for layer, values in layers.items():
            metrics[f"ctl/{pair}/{layer}_max_err"] = float(max(values))
    lap("ctl")
    timing["total"] = round(time.perf_counter() - t_start, 2)
    (workdir / "timing.json").write_text(json.dumps(timing, indent=1))
    return metrics
