"""The toy-VLM run: train on MNIST questions, then geometry and accuracy under replacement.

Writes into the run directory: metrics.jsonl (training), checkpoints/train (resumable),
accuracy.json (mode -> per-draw accuracy per question type), geometry.jsonl (one record per
sample, layer and sublayer) and geometry.json (mean, sd per layer).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from tqdm.auto import tqdm

from projects.lost_in_attention import geometry, replacement
from projects.lost_in_attention.questions import QTYPES, Items, majority_rate, make_items
from projects.lost_in_attention.toy_vlm import ToyVLM, answer_loss
from shared import rng
from shared.data.images import load_digits, load_mnist
from shared.data.pipeline import batch_iterator
from shared.models.llama import SIZES, count_params
from shared.results import write_json
from shared.train.loop import train_loop
from shared.train.optimizers import adamw_no_decay_on_vectors, warmup_cosine


def load_images(cfg):
    splits = load_mnist() if cfg.dataset == "mnist" else load_digits(seed=0)
    return splits.train, splits.test


def build_model(cfg, n_patches: int) -> ToyVLM:
    m = cfg.model
    layout = dataclasses.replace(
        SIZES["tiny"], dim=m.dim, num_layers=m.num_layers, num_heads=m.num_heads,
        num_kv_heads=m.num_heads, ffn_dim=m.ffn_dim, max_seq_len=n_patches + 8,
    )  # fmt: skip
    return ToyVLM(layout, n_patches, cfg.patch**2, rngs=nnx.Rngs(rng.stream(cfg.seed, "init")))


class _ItemBatches:
    """Random (image, question) items: image i asked question q is item q * n + i."""

    def __init__(self, images, digits, patch: int, batch_size: int, seed: int):
        self.items = make_items(images, digits, patch)
        self.inner = batch_iterator(
            {"index": np.arange(len(self.items))}, batch_size, rng.numpy_rng(seed, "data").
            integers(2**31)
        )  # fmt: skip

    def __next__(self) -> dict:
        idx = next(self.inner)["index"]
        return {k: v[idx] for k, v in self.items.arrays().items() if k != "qtype"}

    def get_state(self) -> dict:
        return self.inner.get_state()

    def set_state(self, state: dict) -> None:
        self.inner.set_state(state)


def train(cfg, model: ToyVLM, train_images, workdir: pathlib.Path) -> None:
    t = cfg.train
    tx = adamw_no_decay_on_vectors(
        warmup_cosine(t.lr, t.steps, t.warmup_steps), t.weight_decay, grad_clip=1.0
    )
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))

    @jax.jit
    def step_fn(state, batch, step):
        model, optimizer = nnx.merge(graphdef, state)
        loss, grads = nnx.value_and_grad(answer_loss)(model, batch)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), {"loss": loss}

    batches = _ItemBatches(*train_images, cfg.patch, t.batch_size, cfg.seed)
    state = train_loop(
        state=state,
        step_fn=step_fn,
        batches=batches,
        num_steps=t.steps,
        checkpoint_dir=workdir / "checkpoints" / "train" if cfg.checkpoints else None,
        metrics_path=workdir / "metrics.jsonl",
        items_per_step=t.batch_size,
        log_every=min(50, t.steps),
    )
    nnx.update((model, optimizer), state)


def eval_items(cfg, test_images) -> tuple[Items, Items]:
    """(accuracy items: `images_per_type` test images x every question; geometry items:
    `geometry_samples` of them, the question types cycling), subsets seeded by cfg.seed."""
    x, y = test_images
    pick = rng.numpy_rng(cfg.seed, "eval").permutation(len(x))[: cfg.eval.images_per_type]
    acc = make_items(x[pick], y[pick], cfg.patch)
    n = len(pick)
    geo = np.array([(i % len(QTYPES)) * n + i // len(QTYPES) for i in range(len(acc))])
    geo = geo[: cfg.eval.geometry_samples]
    return acc, Items(**{k: v[geo] for k, v in acc.arrays().items()})


def accuracy(cfg, model: ToyVLM, items: Items) -> dict[str, list[dict[str, float]]]:
    """mode -> one {question type: accuracy} per noise draw (one for deterministic modes)."""
    graphdef, state = nnx.split(model)
    mcfg, e = model.decoder.cfg, cfg.eval
    seq = model.n_patches + items.text.shape[1]

    @jax.jit(static_argnames="mode")
    def predict(state, patches, text, key, mode):
        m = nnx.merge(graphdef, state)
        iv = replacement.intervention(
            mode, key, batch=patches.shape[0], num_heads=mcfg.num_heads,
            num_layers=mcfg.num_layers, seq=seq, n_image=m.n_patches, late_from=e.late_from,
        )  # fmt: skip
        return jnp.argmax(m.traced(patches, text, iv)[0], axis=-1)

    out: dict[str, list] = {}
    base = rng.stream(cfg.seed, "noise")
    runs = [(mode, d) for mode in replacement.MODES
            for d in range(e.noise_draws if mode in replacement.STOCHASTIC else 1)]  # fmt: skip
    for mode, draw in tqdm(runs, desc="replacement", leave=False):
        pred = []
        for s in range(0, len(items), e.batch_size):
            key = jax.random.fold_in(jax.random.fold_in(base, draw), s)
            sl = slice(s, s + e.batch_size)
            pred.append(np.asarray(predict(state, items.patches[sl], items.text[sl], key, mode)))
        hit = np.concatenate(pred) == items.answer
        out.setdefault(mode, []).append(
            {q: float(hit[items.qtype == i].mean()) for i, q in enumerate(QTYPES)}
        )
    return out


def measure_geometry(cfg, model: ToyVLM, items: Items) -> list[dict]:
    graphdef, state = nnx.split(model)

    @jax.jit
    def capture(state, patches, text):
        return nnx.merge(graphdef, state).traced(patches, text, capture=geometry.CAPTURE)[1]

    records = []
    for s in range(0, len(items), cfg.eval.batch_size):
        sl = slice(s, s + cfg.eval.batch_size)
        acts = jax.device_get(capture(state, items.patches[sl], items.text[sl]))
        for r in geometry.measure(acts):
            r["sample"] += s
            r["qtype"] = QTYPES[int(items.qtype[r["sample"]])]
            records.append(r)
    return records


def run_toy(cfg, workdir: pathlib.Path) -> dict[str, float]:
    train_images, test_images = load_images(cfg)
    model = build_model(cfg, (train_images.x.shape[1] // cfg.patch) ** 2)
    write_json(workdir / "model.json", {"parameters": count_params(model)})
    train(cfg, model, train_images, workdir)
    acc_items, geo_items = eval_items(cfg, test_images)
    acc = accuracy(cfg, model, acc_items)
    write_json(workdir / "accuracy.json", {"accuracy": acc, "majority": majority_rate(acc_items)})
    records = measure_geometry(cfg, model, geo_items)
    (workdir / "geometry.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = geometry.summarize(records)
    write_json(workdir / "geometry.json", summary)
    metrics = geometry.flat_means(summary)
    for mode, draws in acc.items():
        for q in QTYPES:
            metrics[f"acc/{mode}/{q}"] = float(np.mean([d[q] for d in draws]))
        metrics[f"acc/{mode}/all"] = float(np.mean([np.mean(list(d.values())) for d in draws]))
    return metrics
