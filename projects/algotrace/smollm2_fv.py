"""Todd-style function vectors of SmolLM2-135M-Instruct on hand-written ICL tasks (forward
passes only): uppercase, first letter, country -> capital, number -> word, in Todd's plain
"Q: x\nA: y\n\n" format (no chat template). Accuracy is exact match of the answer tokens
(teacher-forced argmax, equal to greedy decoding). Heads: universal top-k by AIE averaged over
the four tasks; the injection layer is picked on dev prompts from every `layer_stride`-th layer.
"""

from __future__ import annotations

import numpy as np

from projects.algotrace import fv

WORDS = ("apple banana cherry dog eagle forest garden house island jacket kitchen lemon "
         "mountain needle orange pencil queen river summer table umbrella valley window yellow "
         "zebra bottle candle doctor engine farmer guitar hammer").split()  # fmt: skip
CAPITALS = {
    "France": "Paris", "Germany": "Berlin", "Italy": "Rome", "Spain": "Madrid", "Japan": "Tokyo",
    "China": "Beijing", "Russia": "Moscow", "Egypt": "Cairo", "Greece": "Athens",
    "Portugal": "Lisbon", "Austria": "Vienna", "Poland": "Warsaw", "Norway": "Oslo",
    "Sweden": "Stockholm", "Finland": "Helsinki", "Denmark": "Copenhagen", "Ireland": "Dublin",
    "Hungary": "Budapest", "Turkey": "Ankara", "Kenya": "Nairobi", "Peru": "Lima",
    "Chile": "Santiago", "Cuba": "Havana", "Canada": "Ottawa", "Mexico": "Mexico City",
    "Thailand": "Bangkok", "Vietnam": "Hanoi", "Argentina": "Buenos Aires",
    "England": "London", "Belgium": "Brussels",
}  # fmt: skip
NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()  # fmt: skip
PAIRS = {
    "uppercase": [(w, w.upper()) for w in WORDS],
    "first_letter": [(w, w[0]) for w in WORDS],
    "capital": list(CAPITALS.items()),
    "number_word": [(str(i), w) for i, w in enumerate(NUMBER_WORDS)],
}
SMOL_TASKS = tuple(PAIRS)


def _prompt(demos, query) -> str:
    return "".join(f"Q: {x}\nA: {y}\n\n" for x, y in demos) + f"Q: {query}\nA:"


def _draw(task, n, shots, rng, tokenizer, corrupt=False):
    pairs = PAIRS[task]
    rows, answers = [], []
    for _ in range(n):
        idx = rng.choice(len(pairs), shots + 1, replace=False)
        demos = [pairs[i] for i in idx[:-1]]
        if corrupt:
            ys = [y for _, y in demos]
            while True:
                perm = rng.permutation(len(ys))
                if any(ys[p] != y for p, y in zip(perm, ys)):
                    break
            demos = [(x, ys[p]) for (x, _), p in zip(demos, perm)]
        rows.append(tokenizer.encode(_prompt(demos, pairs[idx[-1]][0])))
        answers.append(tokenizer.encode(" " + pairs[idx[-1]][1]))
    return rows, answers


def run_smollm2_fv(cfg) -> dict:
    from shared.data.tokenizers import smollm2_tokenizer
    from shared.models.pretrained.smollm2 import load_smollm2

    c = cfg.smollm2
    model, tok = load_smollm2(), smollm2_tokenizer()
    rng = np.random.default_rng(cfg.seed + 3)
    means, aies = {}, {}
    for task in SMOL_TASKS:
        rows, _ = _draw(task, c.mean_prompts, c.shots, rng, tok)
        means[task] = fv.mean_head_outputs(model, *fv.pad_batch(rows, tok.pad_id), batch=10)
        rows, answers = _draw(task, c.trials, c.shots, rng, tok, corrupt=True)
        targets = np.asarray([a[0] for a in answers])
        cie = fv.causal_indirect_effects(
            model, *fv.pad_batch(rows, tok.pad_id), targets, means[task]
        )
        aies[task] = cie.mean(-1)
    aie = np.mean([aies[t] for t in SMOL_TASKS], axis=0)
    heads = fv.top_heads(aie, c.top_heads)
    layers = list(range(0, model.cfg.num_layers, c.layer_stride))
    out = {"aie": aie.tolist(), "heads": heads, "layers": layers, "tasks": {}, "metrics": {}}
    for task in SMOL_TASKS:
        vec = fv.function_vector(model, means[task], heads)
        rand = rng.normal(size=vec.shape).astype(np.float32)
        rand *= np.linalg.norm(vec) / np.linalg.norm(rand)
        dev = _draw(task, c.dev_prompts, 0, rng, tok)
        test0 = _draw(task, c.eval_prompts, 0, rng, tok)
        testk = _draw(task, c.eval_prompts, c.shots, rng, tok)
        curve = [fv.answer_accuracy(model, *dev, vector=vec, layer=li, alpha=1.0) for li in layers]
        best = layers[int(np.argmax(curve))]
        row = {
            "zero_shot": fv.answer_accuracy(model, *test0),
            "icl": fv.answer_accuracy(model, *testk, batch=10),
            "fv": fv.answer_accuracy(model, *test0, vector=vec, layer=best, alpha=1.0),
            "random": fv.answer_accuracy(model, *test0, vector=rand, layer=best, alpha=1.0),
            "best_layer": best,
            "fv_norm": float(np.linalg.norm(vec)),
        }
        out["tasks"][task] = {**row, "dev_curve": curve}
        out["metrics"].update({f"{task}/{k}": v for k, v in row.items()})
    return out
