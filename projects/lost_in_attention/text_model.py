"""The text decoders: SmolLM2-135M (offline GGUF) or a converted LLaMA-layout checkpoint, on
Wikipedia lead sections, forward passes only (no retraining).

Per lead: the first `text.tokens` tokens. Geometry as for the toy model (geometry.py), and
next-token top-1 accuracy and NLL (nats) of every position under the replacement modes that
need no image tokens (vanilla, noise_all, noise_late, uniform).
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
from shared import rng
from shared.data.text import wikipedia_documents
from shared.interp import trace
from shared.models.llama import SIZES
from shared.results import append_metrics, write_json

TEXT_MODES = ("vanilla", "noise_all", "noise_late", "uniform")
# LLaVA-1.5-7B's language model (Vicuna-7B v1.5): the LLaMA-2-7B layout
LAYOUTS = {
    "vicuna-7b": dataclasses.replace(
        SIZES["7b"], norm_eps=1e-5, max_seq_len=4096, dtype="bfloat16"
    ),
    "rehearsal": dataclasses.replace(SIZES["nano"], vocab_size=384, num_heads=4, num_kv_heads=4),
}


def load_text_model(cfg):
    """(model, tokenizer) of cfg.backbone."""
    if cfg.backbone == "smollm2":
        from shared.data.tokenizers import smollm2_tokenizer
        from shared.models.pretrained.smollm2 import load_smollm2

        return load_smollm2(), smollm2_tokenizer()
    from shared.models.pretrained.checkpoint import need_file, restore_llama, tokenizer_with_eos

    c = cfg.checkpoint
    if c.layout not in LAYOUTS:
        raise ValueError(f"checkpoint.layout={c.layout!r} is unknown; choose from {list(LAYOUTS)}")
    need_file("checkpoint.checkpoint", c.checkpoint)
    tok = tokenizer_with_eos(need_file("checkpoint.tokenizer_file", c.tokenizer_file))
    mesh = None
    if cfg.mesh_shape:
        from shared import distributed

        mesh = distributed.make_mesh(cfg.mesh_shape, ("data", "model"))
    return restore_llama(LAYOUTS[c.layout], c.checkpoint, mesh), tok


def lead_tokens(tokenizer, documents: int, tokens: int) -> np.ndarray:
    """[documents, tokens] int32: the first `tokens` tokens of the first leads that have them."""
    rows = []
    for doc in wikipedia_documents():
        ids = tokenizer.encode(doc.text)
        if len(ids) >= tokens:
            rows.append(ids[:tokens])
            if len(rows) == documents:
                return np.asarray(rows, np.int32)
    raise ValueError(f"only {len(rows)} leads have {tokens} tokens; lower text.documents")


def _placement(state) -> dict:
    """Parameters and where they live: the mesh axes and how many arrays each axis splits."""
    leaves = jax.tree.leaves(state)
    mesh = getattr(leaves[0].sharding, "mesh", None)
    split = {a: 0 for a in (mesh.axis_names if mesh is not None else ())}
    for x in leaves:
        for axis in jax.tree.leaves(tuple(getattr(x.sharding, "spec", ()))):
            split[axis] = split.get(axis, 0) + 1
    return {
        "parameters": int(sum(x.size for x in leaves)),
        "mesh": dict(mesh.shape) if mesh is not None else None,
        "arrays_split_per_axis": split,
    }


def run_text(cfg, workdir: pathlib.Path) -> dict[str, float]:
    model, tokenizer = load_text_model(cfg)
    t = cfg.text
    leads = lead_tokens(tokenizer, t.documents, t.tokens)
    mcfg = model.cfg
    if t.late_from >= mcfg.num_layers:
        raise ValueError(f"text.late_from={t.late_from} >= the model's {mcfg.num_layers} layers")
    graphdef, state = nnx.split(model)
    write_json(workdir / "model.json", _placement(state))

    @jax.jit
    def capture(state, tokens):
        return trace(nnx.merge(graphdef, state), tokens, capture=geometry.CAPTURE)[1]

    @jax.jit(static_argnames="mode")
    def scores(state, tokens, key, mode):
        iv = replacement.intervention(
            mode, key, batch=tokens.shape[0], num_heads=mcfg.num_heads,
            num_layers=mcfg.num_layers, seq=tokens.shape[1], late_from=t.late_from,
        )  # fmt: skip
        logits = trace(nnx.merge(graphdef, state), tokens, intervention=iv)[0][:, :-1]
        logp = jax.nn.log_softmax(logits, axis=-1)
        nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
        return jnp.argmax(logits, -1) == tokens[:, 1:], nll

    records: dict[int, list] = {0: [], 1: []}  # skip 1: without the first token (see below)
    batches = range(0, len(leads), t.batch_size)
    for s in tqdm(batches, desc="geometry", leave=False):
        acts = jax.device_get(capture(state, leads[s : s + t.batch_size]))
        for skip, recs in records.items():
            for r in geometry.measure(acts, skip=skip):
                recs.append({**r, "sample": r["sample"] + s, "skip": skip})
    lines = [json.dumps(r) + "\n" for recs in records.values() for r in recs]
    (workdir / "geometry.jsonl").write_text("".join(lines))
    # A pretrained decoder's first position is an attention sink with an outsized residual
    # norm that can dominate X's principal subspace; skip 1 is the check without it.
    summary = {f"skip{k}": geometry.summarize(v) for k, v in records.items()}
    write_json(workdir / "geometry.json", summary)
    metrics = geometry.flat_means(summary["skip0"])
    metrics.update(geometry.flat_means(summary["skip1"], prefix="geometry_skip1"))
    base = rng.stream(cfg.seed, "noise")
    acc: dict[str, list] = {}
    runs = [(mode, d) for mode in TEXT_MODES
            for d in range(t.noise_draws if mode in replacement.STOCHASTIC else 1)]  # fmt: skip
    for mode, draw in tqdm(runs, desc="replacement", leave=False):
        hits, nlls = [], []
        for s in batches:
            key = jax.random.fold_in(jax.random.fold_in(base, draw), s)
            h, n = scores(state, leads[s : s + t.batch_size], key, mode)
            hits.append(np.asarray(h))
            nlls.append(np.asarray(n))
        rec = {
            "top1": float(np.concatenate(hits).mean()),
            "nll": float(np.concatenate(nlls).mean()),
        }
        acc.setdefault(mode, []).append(rec)
        append_metrics(workdir, {"phase": "replacement", "mode": mode, "draw": draw, **rec})
    for mode, draws in acc.items():
        metrics[f"text/{mode}/top1"] = float(np.mean([d["top1"] for d in draws]))
        metrics[f"text/{mode}/nll"] = float(np.mean([d["nll"] for d in draws]))
    write_json(workdir / "accuracy.json", {"text": acc})
    return metrics
