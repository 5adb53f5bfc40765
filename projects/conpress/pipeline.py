"""The stages of one run (experiment.py describes the protocol): base model, then per repeat
r(N), SFT data collection and filtering, ConPress / control SFT, evaluation.

Metrics are flat: `rep{r}/<name>` per repeat, and the mean over repeats under `<name>`.
Per repeat, `rep{r}/records.json` in the workdir keeps what the figures are drawn from.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from projects.conpress import models, synthetic
from projects.conpress.compression import compression_ratio, token_reduction
from projects.conpress.filters import (
    keep_correct,
    keep_shorter,
    median_lengths,
    sft_pairs,
    subsample,
)
from projects.conpress.harness import Backend, Measurement, check_context, measure
from projects.conpress.packing import pack_examples
from projects.conpress.parsing import last_boxed
from projects.conpress.prompts import build_prompt
from projects.conpress.questions import Pools, file_pools, synthetic_pools, word_problem_pool
from shared.models.token_sampler import Sampler
from shared.train import preemption
from shared.train.sft import pack_pairs, train_sft

EXAMPLES = 8  # decoded outputs kept per N in rep{r}/records.json


def _log(msg: str) -> None:
    print(f"[conpress {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def pools_for(cfg) -> Pools:
    t = cfg.task
    if t.source == "synthetic":
        return synthetic_pools(t.pool_questions, t.eval_questions, t.hard_questions, t.max_value)
    if t.source == "word_problems":
        return Pools([], word_problem_pool(t.eval_questions), [])
    return file_pools(t.data_dir, t.pool_questions, t.eval_questions, t.hard_questions)


def load_backend(cfg, mesh) -> Backend:
    """The model every repeat starts from (synthetic: freshly initialized, trained later)."""
    m = cfg.model
    if m.source == "smollm2":
        return models.smollm2_backend()
    if m.source == "checkpoint":
        return models.checkpoint_backend(
            m.layout, m.init_checkpoint, m.tokenizer_file, m.chat_template, mesh
        )
    largest = max(*cfg.ns, *cfg.task.base_ns, cfg.conpress_n)
    tok = synthetic.tokenizer(cfg.task.max_value, largest)
    lcfg = models.synthetic_config(
        tok.vocab_size, m.dim, m.num_layers, m.num_heads, m.ffn_dim, m.max_seq_len
    )
    return models.word_backend(models.new_synthetic(lcfg, cfg.seed), tok)


def preflight(backend: Backend, pools: Pools, cfg) -> Backend:
    """Every prompt of the run plus its token budget must fit the model's context: checked
    before any training, so a bad config stops in seconds with the sizes named. Returns the
    backend with the padded prompt length of each N (its longest prompt)."""
    asks = [(pools.in_dist[: cfg.rn_questions], n) for n in cfg.ns]
    if cfg.variants:
        asks += [(pools.pool, cfg.conpress_n), (pools.pool, 1), (pools.in_dist, 1), (pools.hard, 1)]
    widths: dict[int, int] = {}
    for questions, n in asks:
        for i in range(0, len(questions) - n + 1, n):
            prompt = build_prompt([q.text for q in questions[i : i + n]])
            widths[n] = max(widths.get(n, 0), len(backend.encode_prompt(prompt)))
    for n, width in sorted(widths.items()):
        check_context(backend, width, budget(cfg, n), f"the longest {n}-question prompt")
    return dataclasses.replace(backend, prompt_lens=widths)


def train_base(backend: Backend, cfg, workdir: pathlib.Path) -> dict[str, float]:
    """Trains the synthetic base model in place on single- and multi-question prompts."""
    t = cfg.task
    rng = np.random.default_rng([cfg.seed, 1])
    examples = synthetic.training_examples(
        rng, t.base_questions, t.base_ns, t.max_checks, t.max_value
    )
    packed = pack_examples(
        [(backend.encode_prompt(e.prompt), backend.encode_text(e.response)) for e in examples],
        cfg.base_seq_len,
        eos_id=backend.eos_id,
        pad_id=backend.pad_id,
    )
    params = sum(x.size for x in jax.tree.leaves(nnx.state(backend.model, nnx.Param)))
    _log(
        f"base model: {params} parameters; {len(examples)} prompts ({t.base_questions} "
        f"questions) in {len(packed.tokens)} rows of {cfg.base_seq_len} tokens"
    )
    base = dataclasses.replace(cfg.base, seed=cfg.seed)
    train_sft(
        backend.model, packed, base, workdir=workdir, phase="base", checkpoints=cfg.checkpoints
    )
    return {"base/params": float(params), "base/rows": float(len(packed.tokens))}


def budget(cfg, n: int) -> int:
    """New tokens allowed to an n-question output."""
    s = cfg.sampling
    return min(n * s.max_new_per_question, s.max_new_total or n * s.max_new_per_question)


def _sampler(cfg) -> Sampler:
    s = cfg.sampling
    return Sampler(temperature=s.temperature, top_p=s.top_p)


def _measure(backend, questions, n, samples, key, cfg) -> Measurement:
    s = cfg.sampling
    return measure(backend, questions, n, samples, _sampler(cfg), key, budget(cfg, n), s.batch_size)


def compression_metrics(backend, questions, cfg, key) -> tuple[dict[str, float], dict]:
    """r(N) for every N of cfg.ns on the same questions, with parse failures and accuracy."""
    out, records = {}, {}
    runs = {
        n: _measure(backend, questions, n, cfg.sampling.samples, jax.random.fold_in(key, n), cfg)
        for n in cfg.ns
    }
    single = runs[1]
    q = len(questions) - len(questions) % max(cfg.ns)  # the questions every N asked
    for n, r in runs.items():
        ratio = compression_ratio(
            single.tokens[:q], single.correct[:q], r.tokens[:q], r.correct[:q], r.parsed[:q]
        )
        parsed_tokens = r.tokens[r.parsed]
        out |= {
            f"N{n}/r_correct": ratio.correct,
            f"N{n}/r_all": ratio.all,
            f"N{n}/pairs_correct": float(ratio.pairs_correct),
            f"N{n}/parse_failure": r.failure_rate,
            f"N{n}/acc": float(r.correct[:q].mean()),
            f"N{n}/tokens": float(parsed_tokens.mean()) if parsed_tokens.size else float("nan"),
            f"N{n}/truncated": float(r.truncated[:q].mean()),
            f"N{n}/output_tokens": float(r.output_tokens.mean()),
            # parse-free: whole outputs split evenly, and how many outputs box any answer
            f"N{n}/output_tokens_per_question": float(r.output_tokens.mean() / n),
            f"N{n}/boxed": float(np.mean([last_boxed(t) is not None for t in r.texts])),
        }
        records[n] = {"tokens": r.tokens[:q].tolist(), "correct": r.correct[:q].tolist(),
                      "parsed": r.parsed[:q].tolist(), "errors": r.errors,
                      "examples": r.texts[:EXAMPLES]}  # fmt: skip
        _log(
            f"  N={n}: r={ratio.correct:.3f} (all {ratio.all:.3f}), acc {out[f'N{n}/acc']:.3f}, "
            f"parse failures {r.failures}/{r.outputs}, tokens/question {out[f'N{n}/tokens']:.1f}"
        )
    return out, records


def sft_data(backend, pool, cfg, key) -> tuple[dict[str, list], dict[str, float]]:
    """Samples the pool under N = conpress_n and N = 1, then `select_pairs`."""
    s = cfg.sampling
    multi = _measure(backend, pool, cfg.conpress_n, s.pool_samples, jax.random.fold_in(key, 0), cfg)
    single = _measure(backend, pool, 1, s.pool_samples, jax.random.fold_in(key, 1), cfg)
    seed = int(jax.random.randint(jax.random.fold_in(key, 2), (), 0, 2**31 - 1))
    return select_pairs(multi, single, cfg, seed)


def select_pairs(
    multi: Measurement, single: Measurement, cfg, seed: int
) -> tuple[dict[str, list], dict[str, float]]:
    """The candidates of every variant in cfg.variants, each subsampled to one common size:
    control = correct single-question answers; conpress = correct N-question segments;
    conpress_unfiltered = every parsed segment; conpress_length = correct segments shorter than
    their question's median single-question length."""
    correct_multi = keep_correct(multi.candidates)
    by_variant = {
        "control": keep_correct(single.candidates),
        "conpress": correct_multi,
        "conpress_unfiltered": multi.candidates,
        "conpress_length": keep_shorter(correct_multi, median_lengths(single.candidates)),
    }
    by_variant = {v: c for v, c in by_variant.items() if v in cfg.variants}
    size = min([cfg.sft_examples, *(len(c) for c in by_variant.values())])
    metrics = {
        "pool/multi_parse_failure": multi.failure_rate,
        "pool/multi_correct": float(np.mean([c.correct for c in multi.candidates] or [np.nan])),
        "pool/single_correct": float(np.mean([c.correct for c in single.candidates] or [np.nan])),
        "pool/sft_examples": float(size),
        **{f"pool/{v}_available": float(len(c)) for v, c in by_variant.items()},
    }
    if size < max(cfg.min_sft_pairs, 1):
        counts = ", ".join(f"{v} {len(c)}" for v, c in by_variant.items())
        why = (
            f"{counts} pairs survive the filters (parse failures {multi.failures}/{multi.outputs})"
        )
        if cfg.min_sft_pairs:
            raise RuntimeError(
                f"{why}, fewer than min_sft_pairs={cfg.min_sft_pairs}: check the prompt format "
                "and the base model, or collect more (task.pool_questions, sampling.pool_samples)"
            )
        _log(f"  WARNING: {why}; SFT skipped (min_sft_pairs=0)")
        return {}, metrics
    picked = {v: subsample(c, size, seed) for v, c in by_variant.items()}
    for v, c in picked.items():
        metrics[f"{v}/sft_pairs"] = float(len(c))
        metrics[f"{v}/sft_tokens"] = float(np.mean([x.tokens for x in c]))
        metrics[f"{v}/sft_correct"] = float(np.mean([x.correct for x in c]))
        if cfg.task.source == "synthetic":
            right = [synthetic.trace_is_right(x.question, x.response) for x in c]
            metrics[f"{v}/sft_trace_right"] = float(np.mean(right))
    return picked, metrics


def evaluate(backend, pools: Pools, cfg, key, prefix: str, base: dict | None) -> dict[str, float]:
    """Single-question tokens and accuracy on each held-out split, by difficulty bucket too."""
    out = {}
    for i, (split, questions) in enumerate((("in_dist", pools.in_dist), ("hard", pools.hard))):
        if not questions:
            continue
        r = _measure(backend, questions, 1, cfg.sampling.samples, jax.random.fold_in(key, i), cfg)
        tokens = float(r.tokens.mean())
        out |= {
            f"{prefix}/{split}_tokens": tokens,
            f"{prefix}/{split}_acc": float(r.correct.mean()),
            f"{prefix}/{split}_truncated": float(r.truncated.mean()),
        }
        if base is not None:
            out[f"{prefix}/{split}_reduction"] = token_reduction(
                tokens, base[f"base/{split}_tokens"]
            )
        buckets = np.array([q.bucket for q in questions])
        for b in sorted(set(buckets)):
            out[f"{prefix}/acc_b{b}"] = float(r.correct[buckets == b].mean())
    return out


def finetune(
    backend: Backend, start, graphdef, pairs, cfg, seed: int, workdir, phase: str
) -> Backend:
    """A copy of the base model (graphdef, start state) fine-tuned on single-question (prompt,
    response) pairs -> (its backend, the share of responses cut to fit a row)."""
    model = nnx.merge(graphdef, jax.tree.map(jnp.array, start))
    ids = [(backend.encode_prompt(p), backend.encode_text(r)) for p, r in pairs]
    # A response longer than a row (only an unfiltered segment can be) is cut at the row's end
    # and counted: Reconstruction, the paper does not say.
    packed = pack_pairs(
        ids, cfg.sft_seq_len, eos_id=backend.eos_id, pad_id=backend.pad_id, truncate=True
    )
    sft = dataclasses.replace(cfg.sft, seed=seed)
    train_sft(model, packed, sft, workdir=workdir, phase=phase, checkpoints=cfg.checkpoints)
    return dataclasses.replace(backend, model=model), float(packed.truncated.mean())


def run_pipeline(cfg, workdir: pathlib.Path) -> dict[str, float]:
    """Base model, then `cfg.repeats` x (r(N), SFT data, SFT per variant, evaluation)."""
    mesh = None
    if cfg.mesh_shape:
        from shared.distributed import make_mesh

        mesh = make_mesh(cfg.mesh_shape, ("data", "model"))
    pools = pools_for(cfg)
    backend = load_backend(cfg, mesh)
    backend = preflight(backend, pools, cfg)
    metrics = train_base(backend, cfg, workdir) if cfg.model.source == "synthetic" else {}
    graphdef, start = nnx.split(backend.model)
    root = jax.random.key(cfg.seed)
    reps = []
    for r in range(cfg.repeats):
        preemption.check(f"repeat {r}")
        _log(f"repeat {r + 1}/{cfg.repeats}: r(N) for N in {cfg.ns}")
        key = jax.random.fold_in(root, 1000 + r)
        rn, records = compression_metrics(backend, pools.in_dist[: cfg.rn_questions], cfg, key)
        rep = {f"rn/{k}": v for k, v in rn.items()}
        if cfg.variants:
            eval_key = jax.random.fold_in(key, 1)  # the same draws for every model: paired
            base = evaluate(backend, pools, cfg, eval_key, "base", None)
            rep |= base
            _log(f"  base: {_summary(base, 'base')}")
            picked, data = sft_data(backend, pools.pool, cfg, jax.random.fold_in(key, 2))
            rep |= data
            _log(f"  SFT pairs per variant: {int(data['pool/sft_examples'])}")
            for v in picked:
                preemption.check(f"repeat {r} SFT {v}")
                tuned, cut = finetune(
                    backend, start, graphdef, sft_pairs(picked[v]), cfg, cfg.seed * 1000 + r,
                    workdir, f"rep{r}_{v}",
                )  # fmt: skip
                result = evaluate(tuned, pools, cfg, eval_key, v, base) | {f"{v}/sft_cut": cut}
                rep |= result
                _log(f"  {v}: {_summary(result, v)}")
        reps.append(rep)
        path = workdir / f"rep{r}" / "records.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rn": records, "metrics": rep}))
    for r, rep in enumerate(reps):
        metrics |= {f"rep{r}/{k}": v for k, v in rep.items()}
    for k in reps[0]:
        values = np.array([rep.get(k, np.nan) for rep in reps], np.float64)
        metrics[k] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    return metrics


def _summary(m: dict[str, float], prefix: str) -> str:
    parts = []
    for split in ("in_dist", "hard"):
        if f"{prefix}/{split}_tokens" in m:
            parts.append(
                f"{split} tokens {m[f'{prefix}/{split}_tokens']:.1f} "
                f"acc {m[f'{prefix}/{split}_acc']:.3f}"
            )
    return ", ".join(parts)
