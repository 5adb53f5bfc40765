"""Checks the offline models and text data end to end and prints the numbers behind them.

    python launch/check_models.py [--ppl-windows N] [--shakespeare-steps N] [--out DIR]

1. all-MiniLM-L6-v2: cosine of the reference pair (expected 0.755) and of unrelated pairs.
2. SmolLM2-135M-Instruct: token ids of the reference prompt, final-position top-5 logits against
   ../shared/MODELS.md, the greedy answer to "What is the capital of France?".
3. SmolLM2 perplexity on held-out Wikipedia leads (test split, packed 256-token windows) against
   an add-one unigram model fitted on the training split with the same tokenizer.
4. A tiny Flax LLaMA trained from scratch on Shakespeare (bytes): validation loss against the
   unigram entropy of the bytes.
Results go to stdout and, with --out, to DIR/check_models.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402

from shared.data.lm_pipeline import pack_documents, token_stream, unigram_entropy  # noqa: E402
from shared.data.text import load_corpus  # noqa: E402
from shared.data.tokenizers import ByteTokenizer, smollm2_tokenizer  # noqa: E402
from shared.models.llama import SIZES, Llama, count_params  # noqa: E402
from shared.models.pretrained.minilm import encode_sentences  # noqa: E402
from shared.models.pretrained.smollm2 import chat_prompt, load_smollm2  # noqa: E402
from shared.models.sampling import generate  # noqa: E402
from shared.train.lm import LMTrainConfig, evaluate_lm, train_lm  # noqa: E402

PAIRS = [
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("A man is eating food.", "The stock market fell sharply on Monday."),
    ("The cat sleeps on the windowsill.", "Central banks raised interest rates again."),
    ("She plays the violin beautifully.", "The volcano erupted last night."),
]
TOP5 = {504: 27.859, 60: 26.130, 38634: 26.102, 15319: 25.962, 7026: 25.181}


def check_minilm() -> dict:
    emb = encode_sentences([s for pair in PAIRS for s in pair])
    cos = [float(emb[2 * i] @ emb[2 * i + 1]) for i in range(len(PAIRS))]
    for (a, b), c in zip(PAIRS, cos):
        print(f"  cos = {c:+.5f}  {a!r} / {b!r}")
    return {"minilm/cos_reference": cos[0], "minilm/cos_unrelated_max": max(cos[1:])}


def check_smollm2(model, tok) -> dict:
    prompt = tok.encode(chat_prompt("What is the capital of France?", system=None))
    logits = np.asarray(nnx.jit(lambda m, x: m(x))(model, jnp.asarray([prompt]))[0, -1])
    top = np.argsort(-logits)[:5]
    for i in top:
        ref = TOP5.get(int(i), float("nan"))
        print(f"  {tok.decode([int(i)])!r:>8} ({i:5d}) {logits[i]:.3f}  reference {ref:.3f}")
    answer = tok.decode(generate(model, [prompt], 16, eos_id=tok.eos_id)[0])
    print(f"  greedy answer: {answer!r}")
    top5_match = [int(i) for i in top] == list(TOP5)
    return {
        "smollm2/top5_ids_match": float(top5_match),
        "smollm2/top5_max_abs_diff": float(np.max(np.abs(logits[top] - list(TOP5.values())))),
        "smollm2/greedy_is_paris": float(answer == "The capital of France is Paris."),
    }


def smollm2_perplexity(model, tok, max_windows: int) -> dict:
    corpus = load_corpus("wikipedia")
    windows = pack_documents(corpus.test, tok, 256)[:max_windows]
    t = time.perf_counter()
    nll = evaluate_lm(model, windows, batch_size=8)
    seconds = time.perf_counter() - t
    unigram = unigram_entropy(token_stream(corpus.train, tok), windows[:, 1:], tok.vocab_size)
    n = windows[:, 1:].size
    print(f"  {len(windows)} windows x 256 = {n} held-out tokens ({n / seconds:.0f} tokens/s)")
    print(f"  SmolLM2 perplexity {math.exp(nll):.2f} vs unigram {math.exp(unigram):.1f}")
    return {
        "wikipedia/tokens": float(n),
        "wikipedia/smollm2_ppl": math.exp(nll),
        "wikipedia/unigram_ppl": math.exp(unigram),
    }


def shakespeare_tiny_llama(steps: int) -> dict:
    corpus, tok = load_corpus("shakespeare"), ByteTokenizer()
    train = pack_documents(corpus.train, tok, 128)
    val = pack_documents(corpus.validation, tok, 128)
    unigram = unigram_entropy(train[:, 1:], val[:, 1:], tok.vocab_size)
    model = Llama(dataclasses.replace(SIZES["tiny"], vocab_size=tok.vocab_size), rngs=nnx.Rngs(0))
    cfg = LMTrainConfig(steps=steps, batch_size=32, lr=3e-3, eval_every=max(steps // 3, 1))
    t = time.perf_counter()
    history = train_lm(model, train, val, cfg)
    seconds = time.perf_counter() - t
    print(f"  tiny LLaMA ({count_params(model):,} params), {steps} steps of 32 x 128 bytes")
    for s, loss in zip(history["step"], history["val_loss"]):
        print(f"  step {s:4d}: validation {loss:.3f} nats/byte ({loss / math.log(2):.2f} bits)")
    print(f"  unigram entropy {unigram:.3f} nats/byte; {seconds:.0f} s")
    return {"shakespeare/val_loss": history["val_loss"][-1], "shakespeare/unigram": unigram}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ppl-windows", type=int, default=1000, help="at most this many")
    parser.add_argument("--shakespeare-steps", type=int, default=300)
    parser.add_argument("--out", type=pathlib.Path)
    args = parser.parse_args()
    results: dict[str, float] = {}
    print("1. all-MiniLM-L6-v2 sentence similarity (mean pooling, L2 normalised)")
    results.update(check_minilm())
    print("2. SmolLM2-135M-Instruct from GGUF: reference prompt")
    model, tok = load_smollm2(), smollm2_tokenizer()
    results.update(check_smollm2(model, tok))
    print("3. SmolLM2 on held-out Wikipedia leads")
    results.update(smollm2_perplexity(model, tok, args.ppl_windows))
    print("4. Flax LLaMA from scratch on Shakespeare")
    results.update(shakespeare_tiny_llama(args.shakespeare_steps))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "check_models.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
