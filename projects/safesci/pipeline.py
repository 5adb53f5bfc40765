"""One run: build the items, then for each model of `cfg.models` ask every test item and score.

Word-level decoder (Reconstruction of the spec's CPU plan): pretrained once on the fact
sentences of every compound, then for each of `repeats` SFT seeds each variant fine-tunes a
copy of that base on its instruction data (same steps and batch for every variant); `none` is
the base itself, asked once. SmolLM2-135M-Instruct: greedy on the official prompts, zero-shot
(the official format demonstrations only) and few-shot (plus solved train items:
`few_shot_picker`); zero-shot also scores every MCQ test item by log-likelihood. A converted
open model (paper config) before and after SFT on the training file. Each (model, repeat)
writes its five 34% subsample scores per metric to `repeats.jsonl` and its responses to
`responses/`; the run returns the pooled mean and sd.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.safesci import benchmark
from projects.safesci.backends import smollm2_responder, token_responder, word_responder
from projects.safesci.data import Dataset, compounds_of, mini_dataset, vocabulary_texts
from projects.safesci.experiment import ALL_MCQ, SEEN
from projects.safesci.harness import (
    Scored,
    ask,
    ask_log_likelihood,
    subset_summary,
    summarize,
)
from projects.safesci.items import TAGGED, Item
from projects.safesci.prompts import compact_prompt, official_prompt
from shared.data.word_tokenizer import WordTokenizer
from shared.models.llama import Llama, LlamaConfig
from shared.train.sft import pack_pairs, train_sft

SMOLLM2_MODES = ("smollm2_zero_shot", "smollm2_few_shot")
# Llama-3.1-8B's layout shrunk for the rehearsal of the paper config (rehearsal.py)
REHEARSAL_LAYOUT = LlamaConfig(
    vocab_size=384, dim=64, num_layers=2, num_heads=4, num_kv_heads=1, ffn_dim=224,
    rope_base=500000.0, norm_eps=1e-5, max_seq_len=1024,
)  # fmt: skip


def _log(msg: str) -> None:
    print(f"[safesci] {msg}", file=sys.stderr, flush=True)


def dataset(cfg) -> Dataset:
    d = cfg.data
    if d.source == "mini":
        return mini_dataset(d.compounds, d.train_compounds, d.seed)
    from projects.safesci.real_files import load_bench, load_train

    bench = load_bench(d.data_dir, seed=d.seed, file=d.test_file)
    pairs, skipped = load_train(d.data_dir, seed=d.seed)
    _log(f"{len(bench.items)} test items from {d.data_dir}; skipped {bench.skipped}")
    _log(f"{len(pairs)} training pairs; skipped {skipped}")
    return Dataset(bench.items, [it for it, _ in pairs], [], {}, pairs)


def fact_rows(tok: WordTokenizer, facts: list[str], seq_len: int, seed: int):
    """Shuffled fact sentences packed greedily into rows `bos s1 s2 ...` of <= seq_len + 1
    tokens, every token after bos a target (plain language-model pretraining)."""
    order = np.random.default_rng(seed).permutation(len(facts))
    rows, row = [], []
    for i in order:
        ids = tok.encode(facts[i])
        if row and 1 + len(row) + len(ids) > seq_len + 1:
            rows.append(row)
            row = []
        row = row + ids
    rows.append(row)
    return pack_pairs([([tok.bos_id], r) for r in rows], seq_len, pad_id=tok.pad_id)


def sft_rows(tok: WordTokenizer, examples: list[benchmark.Example], seq_len: int):
    pairs = [
        ([tok.bos_id, *tok.encode(compact_prompt(e.item)), tok.sep_id], tok.encode(e.response))
        for e in examples
    ]
    return pack_pairs(pairs, seq_len, eos_id=tok.eos_id, pad_id=tok.pad_id)


def _copy(model: Llama) -> Llama:
    graphdef, state = nnx.split(model)
    return nnx.merge(graphdef, jax.tree.map(jnp.array, state))


def _record(workdir: pathlib.Path, model: str, repeat: int, scored: Scored, seed: int) -> dict:
    subsets = subset_summary(scored, seed)
    with open(workdir / "repeats.jsonl", "a") as f:
        f.write(json.dumps({"model": model, "repeat": repeat, "subsets": subsets}) + "\n")
    if not scored.responses:  # a log-likelihood-only score: no responses to keep
        return subsets
    out = workdir / "responses" / f"{model}_r{repeat}.jsonl"
    out.parent.mkdir(exist_ok=True)
    with open(out, "w") as f:
        for it, resp, pred in zip(scored.items, scored.responses, scored.predictions):
            row = {"kind": it.kind, "category": it.category, "question": it.question,
                   "gold": it.gold, "response": resp, "prediction": pred}  # fmt: skip
            f.write(json.dumps(row) + "\n")
    return subsets


def word_models(cfg, ds: Dataset, workdir: pathlib.Path) -> dict[str, list[dict]]:
    variants = [m for m in cfg.models if m in benchmark.VARIANTS]
    tok = WordTokenizer.from_corpus(vocabulary_texts(ds))
    tok.save(workdir / "tokenizer.json")
    m = cfg.model
    lcfg = LlamaConfig(tok.vocab_size, m.dim, m.num_layers, m.num_heads, m.num_heads, m.ffn_dim,
                       max_seq_len=m.max_seq_len)  # fmt: skip
    base = Llama(lcfg, rngs=nnx.Rngs(jax.random.key(cfg.seed)))
    params = sum(x.size for x in jax.tree.leaves(nnx.state(base, nnx.Param)))
    _log(f"vocabulary {tok.vocab_size} words; decoder {params / 1e6:.2f}M parameters")
    rows = fact_rows(tok, ds.facts, cfg.pretrain_seq_len, cfg.seed)
    _log(f"pretraining on {len(ds.facts)} fact sentences in {len(rows.tokens)} rows")
    train_sft(base, rows, cfg.pretrain, workdir=workdir, phase="pretrain",
              checkpoints=cfg.checkpoints)  # fmt: skip
    results: dict[str, list[dict]] = {v: [] for v in variants}
    # knowledge items of compounds the SFT data answered: did fine-tuning fit them at all?
    seen = compounds_of([it for it in ds.train if it.kind in TAGGED], cfg.eval.sft_compounds)

    def evaluate(model: Llama, v: str, r: int, seed: int) -> None:
        responder = word_responder(model, tok, cfg.eval.batch_size)
        results[v].append(_record(workdir, v, r, ask(responder, ds.test,
                                                     cfg.eval.max_new_tokens), seed))  # fmt: skip
        key = f"{v}{SEEN}"
        results.setdefault(key, []).append(
            _record(workdir, key, r, ask(responder, seen, cfg.eval.max_new_tokens), seed)
        )

    for r in range(cfg.repeats):
        seed = cfg.seed * 1000 + r
        for v in variants:
            if v == "none":
                if r == 0:  # the base model does not depend on the SFT seed
                    evaluate(base, v, r, seed)
                continue
            t0 = time.time()
            rng = np.random.default_rng(seed)
            examples = benchmark.instruction_data(ds.train, ds.kb, v, rng)[: cfg.sft_examples]
            model = _copy(base)
            sft = dataclasses.replace(cfg.sft, seed=seed)
            train_sft(model, sft_rows(tok, examples, cfg.sft_seq_len), sft, workdir=workdir,
                      phase=f"sft_{v}_r{r}", checkpoints=cfg.checkpoints)  # fmt: skip
            evaluate(model, v, r, seed)
            _log(f"{v} r{r}: {len(examples)} SFT pairs, {time.time() - t0:.0f} s; "
                 + _brief(summarize(results[v][-1:])))  # fmt: skip
    return results


def few_shot_picker(ds: Dataset, k: int):
    """item -> k solved training pairs (official-format responses) shown before it: of its own
    kind for MCQ and TF items (the format is visible anyway); for a request, alternately a
    risk and a benign one whatever the item is, since choosing by kind would give away
    whether the request is risky."""
    by_kind: dict[str, list[tuple[Item, str]]] = {}
    for it, response in ds.pairs:
        by_kind.setdefault(it.kind, []).append((it, response))
    requests = [x for pair in zip(by_kind.get("risk", []), by_kind.get("benign", []))
                for x in pair]  # fmt: skip

    def pick(it: Item) -> list[tuple[Item, str]]:
        return (requests if it.kind in ("risk", "benign") else by_kind.get(it.kind, []))[:k]

    return pick


def smollm2_models(cfg, ds: Dataset, workdir: pathlib.Path) -> dict[str, list[dict]]:
    from shared.models.pretrained.smollm2 import load_smollm2

    model = load_smollm2()
    items = compounds_of(ds.test, cfg.eval.smollm2_compounds)
    results = {}
    for mode in [m for m in cfg.models if m in SMOLLM2_MODES]:
        t0 = time.time()
        k = cfg.eval.few_shot if mode == "smollm2_few_shot" else 0
        responder = smollm2_responder(model, cfg.eval.smollm2_batch_size,
                                      few_shot_picker(ds, k), name=mode)  # fmt: skip
        scored = ask(responder, items, cfg.eval.smollm2_max_new_tokens)
        results[mode] = [_record(workdir, mode, 0, scored, cfg.seed * 1000)]
        _log(f"{mode}: {len(items)} items, {time.time() - t0:.0f} s; "
             + _brief(summarize(results[mode])))  # fmt: skip
        if cfg.eval.smollm2_ll_all and mode == "smollm2_zero_shot":
            t0, key = time.time(), mode + ALL_MCQ
            scored = ask_log_likelihood(responder, ds.test)
            results[key] = [_record(workdir, key, 0, scored, cfg.seed * 1000)]
            _log(f"{key}: {len(scored.items)} items, {time.time() - t0:.0f} s; "
                 + _brief(summarize(results[key])))  # fmt: skip
    return results


def checkpoint_models(cfg, ds: Dataset, workdir: pathlib.Path) -> dict[str, list[dict]]:
    """The converted open model on the official prompts, then (checkpoint_sft) fully fine-tuned
    on the training pairs (official prompt -> official response) and asked again."""
    from shared.models.llama import SIZES
    from shared.models.pretrained.checkpoint import need_file, restore_llama, tokenizer_with_eos

    c = cfg.checkpoint
    need_file("checkpoint.init_checkpoint", c.init_checkpoint)
    need_file("checkpoint.tokenizer_file", c.tokenizer_file)
    if "{prompt}" not in c.chat_template:
        raise ValueError(f"checkpoint.chat_template must contain {{prompt}}: {c.chat_template!r}")
    mesh = None
    if cfg.mesh_shape:
        from shared.distributed import make_mesh

        mesh = make_mesh(cfg.mesh_shape, ("data", "model"))
    layout = REHEARSAL_LAYOUT if c.layout == "rehearsal" else SIZES[c.layout]
    tok = tokenizer_with_eos(c.tokenizer_file, (c.eos_token,))
    model = restore_llama(layout, c.init_checkpoint, mesh)

    def encode_prompt(p: str) -> list[int]:
        return tok.encode(c.chat_template.replace("{prompt}", p))

    def responder(name: str):
        return token_responder(name, model, official_prompt, encode_prompt, tok.encode,
                               tok.decode, tok.eos_id, tok.pad_id, c.batch_size)  # fmt: skip

    results = {}
    if "checkpoint" in cfg.models:
        scored = ask(responder("checkpoint"), ds.test, c.max_new_tokens)
        results["checkpoint"] = [_record(workdir, "checkpoint", 0, scored, cfg.seed * 1000)]
    if "checkpoint_sft" in cfg.models:
        pairs = [(encode_prompt(official_prompt(it)), tok.encode(r)) for it, r in ds.pairs]
        packed = pack_pairs(pairs, c.sft_seq_len, eos_id=tok.eos_id, pad_id=tok.pad_id,
                            truncate=True)  # fmt: skip
        _log(f"checkpoint SFT on {len(pairs)} pairs ({packed.truncated.mean():.1%} cut)")
        train_sft(model, packed, dataclasses.replace(c.sft, seed=cfg.seed), workdir=workdir,
                  phase="sft_checkpoint", checkpoints=cfg.checkpoints)  # fmt: skip
        scored = ask(responder("checkpoint_sft"), ds.test, c.max_new_tokens)
        results["checkpoint_sft"] = [_record(workdir, "checkpoint_sft", 0, scored, cfg.seed * 1000)]
    return results


def _brief(m: dict[str, float]) -> str:
    keys = ("mcq_lenient", "mcq_ll", "tf", "refusal_risk", "refusal_benign", "format_fail")
    return ", ".join(f"{k} {m[k]:.1f}" for k in keys if k in m)


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "repeats.jsonl").unlink(missing_ok=True)
    ds = dataset(cfg)
    _log(f"{len(ds.test)} test items, {len(ds.train)} train items")
    results = {}
    if any(m in benchmark.VARIANTS for m in cfg.models):
        results.update(word_models(cfg, ds, workdir))
    if any(m in SMOLLM2_MODES for m in cfg.models):
        results.update(smollm2_models(cfg, ds, workdir))
    if any(m.startswith("checkpoint") for m in cfg.models):
        results.update(checkpoint_models(cfg, ds, workdir))
    metrics = {}
    for model, subsets in results.items():
        for k, v in summarize(subsets).items():
            metrics[f"{model}/{k}"] = v
    return metrics
