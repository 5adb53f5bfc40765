"""Tier 2: adversarial suffixes on invalid (slipped) held-out solutions, per PRM (spec §2, §5).

Reported as r_last = sigmoid(last-step logit), mean over the attacked solutions: before (no
suffix), with the random initial suffix (the control: does any suffix move r_last?), after GCG,
after the continuous embedding attack; the share of solutions pushed above 0.5; the peak width
(share of random single-token edits of the GCG suffix that keep r_last above a threshold) and
r_last against the Hamming distance from the GCG suffix (figure).
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np

from projects.prm_biasbench import attacks
from projects.prm_biasbench.scoring import Scorer
from shared import rng
from shared.config import Fraction, NonNegativeInt, PositiveFloat, PositiveInt
from shared.data.tokenizers import HFTokenizer
from shared.data.word_tokenizer import RESERVED, WordTokenizer


@dataclasses.dataclass(frozen=True)
class AttackConfig:
    num_solutions: PositiveInt = 200  # invalid (slipped) held-out solutions attacked per PRM
    suffix_len: PositiveInt = 8  # m adversarial tokens appended to the last step
    iterations: NonNegativeInt = 100  # GCG iterations
    top_k: PositiveInt = 32  # candidate tokens per suffix position
    candidates: PositiveInt = 64  # B candidates evaluated per iteration and solution
    continuous_steps: NonNegativeInt = 100  # Adam steps of the embedding attack
    continuous_lr: PositiveFloat = 0.05  # its learning rate (embedding units)
    hamming_samples: PositiveInt = 16  # random suffixes per Hamming distance (peak width: d=1)
    peak_threshold: Fraction = 0.9  # r_last an edit must keep to count inside the peak
    chunk: PositiveInt = 256  # rows per candidate forward (memory bound)


def allowed_words(tokenizer: WordTokenizer) -> np.ndarray:
    """[V] bool: words a suffix may use (no reserved ids, no newline runs: the step count stays)."""
    ok = np.ones(tokenizer.vocab_size, bool)
    ok[: len(RESERVED)] = False
    for i, w in enumerate(tokenizer.words):
        ok[i] &= not w.startswith("\n")
    return ok


def allowed_wordpieces(tokenizer: HFTokenizer) -> np.ndarray:
    """[V] bool: whole-word WordPiece tokens (no [CLS]/[SEP]/[PAD]/[MASK]/[UNK], no [unusedN],
    no ## continuation pieces, which would glue onto the answer's last word as text)."""
    ok = np.zeros(tokenizer.vocab_size, bool)
    for token, i in tokenizer.tok.get_vocab(with_added_tokens=True).items():
        ok[i] = not (token.startswith("[") and token.endswith("]")) and not token.startswith("##")
    return ok


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(z, np.float64)))


def attack_prm(
    name: str,
    scorer: Scorer,
    pairs: list[tuple[str, str]],
    allowed: np.ndarray,
    cfg: AttackConfig,
    seed: int,
) -> tuple[dict[str, float], dict]:
    """tier2/<name>/... metrics and the curves (GCG progress, Hamming distance) for the figure."""
    gen = rng.numpy_rng(seed, f"attack/{name}")
    rows = scorer.encode(pairs)
    before = np.array([z[-1] for z in scorer.logits(rows)])
    allowed_ids = np.flatnonzero(allowed)
    m = cfg.suffix_len
    init = allowed_ids[gen.integers(len(allowed_ids), size=(len(rows), m))]
    sb = attacks.suffix_batch(rows, init, scorer.processor.pad_id)
    g, s = scorer.graphdef, scorer.state
    random_logit = attacks.evaluate(g, s, sb, init[:, None], cfg.chunk)[:, 0]

    def progress(iteration: int, best: np.ndarray) -> None:
        if iteration % 10 == 0 or iteration == cfg.iterations:
            r = float(_sigmoid(best).mean())
            print(f"tier 2, {name}: GCG {iteration}/{cfg.iterations}, mean r_last {r:.3f}",
                  file=sys.stderr, flush=True)  # fmt: skip

    result = attacks.gcg(
        g, s, sb, init, allowed, cfg.iterations, cfg.top_k, cfg.candidates, gen, cfg.chunk,
        progress,
    )  # fmt: skip
    cont = attacks.continuous(g, s, sb, result.suffix, cfg.continuous_steps, cfg.continuous_lr)
    hamming = []
    for d in range(m + 1):
        samples = attacks.hamming_samples(result.suffix, d, cfg.hamming_samples, allowed_ids, gen)
        hamming.append(_sigmoid(attacks.evaluate(g, s, sb, samples, cfg.chunk)))
    p = f"tier2/{name}"
    out = {
        f"{p}/r_before": float(_sigmoid(before).mean()),
        f"{p}/r_random_suffix": float(_sigmoid(random_logit).mean()),
        f"{p}/r_gcg": float(_sigmoid(result.logit).mean()),
        f"{p}/r_continuous": float(_sigmoid(cont).mean()),
        f"{p}/success_gcg": float((result.logit > 0).mean()),
        f"{p}/success_continuous": float((cont > 0).mean()),
        f"{p}/peak_width": float((hamming[1] > cfg.peak_threshold).mean()) if m else 0.0,
    }
    curves = {
        "gcg_best_r": _sigmoid(result.trace).mean(1).tolist(),
        "hamming_r": [float(h.mean()) for h in hamming],
        "hamming_r_std": [float(h.mean(1).std()) for h in hamming],
        "suffixes": result.suffix.tolist(),
    }
    return out, curves
