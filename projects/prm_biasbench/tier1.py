"""Tier 1: static perturbations and ProcessBench-style first-error F1 (spec §2, §5).

Per PRM and per perturbation type, on the same held-out clean solutions:
Δr_last = mean(r_last(perturbed) - r_last(clean)), Δr_min likewise, and the AUROC of telling
perturbed from clean by -r_min (0.5: the PRM does not react; 1: every perturbed solution scores
below every clean one). The share of perturbed solutions that truly contain a wrong step
(`steps.true_labels`) is reported beside them: 0 for style types, 1 for logic types.
F1 on held-out slips and their clean originals (threshold 0.5 on every step score).
"""

from __future__ import annotations

import numpy as np

from projects.prm_biasbench import data, metrics
from projects.prm_biasbench.scoring import Scorer, r_last, r_min
from projects.prm_biasbench.steps import first_error


def _pairs(examples: list[data.Example]) -> list[tuple[str, str]]:
    return [(e.question, e.solution) for e in examples]


def evaluate_prm(
    name: str,
    scorer: Scorer,
    clean: list[data.Example],
    perturbed: dict[str, list[data.Example]],
    slips: list[data.Example],
    threshold: float,
) -> dict[str, float]:
    """tier1/<name>/... metrics of one PRM."""
    out: dict[str, float] = {}
    base = scorer(_pairs(clean))
    base_last, base_min = r_last(base), r_min(base)
    out[f"tier1/{name}/clean/r_last"] = float(base_last.mean())
    out[f"tier1/{name}/clean/r_min"] = float(base_min.mean())
    for kind, examples in perturbed.items():
        scores = scorer(_pairs(examples))
        last, low = r_last(scores), r_min(scores)
        labels = np.r_[np.zeros(len(base_min)), np.ones(len(low))]
        out[f"tier1/{name}/{kind}/dlast"] = metrics.mean_delta(last, base_last)
        out[f"tier1/{name}/{kind}/dmin"] = metrics.mean_delta(low, base_min)
        out[f"tier1/{name}/{kind}/auroc"] = metrics.auroc(labels, -np.r_[base_min, low])
    slip_scores = scorer(_pairs(slips))
    true = [first_error(list(e.labels)) for e in slips] + [-1] * len(clean)
    pred = [metrics.predicted_first_error(s, threshold) for s in [*slip_scores, *base]]
    for key, value in metrics.processbench_f1(true, pred).items():
        out[f"tier1/{name}/slips/{key}"] = value
    out[f"tier1/{name}/slips/r_last"] = float(r_last(slip_scores).mean())
    return out


def truth_shares(perturbed: dict[str, list[data.Example]]) -> dict[str, float]:
    """tier1/truth/<type>/error_share: share of perturbed solutions with a wrong step."""
    return {
        f"tier1/truth/{kind}/error_share": data.label_counts(ex)["share_with_error"]
        for kind, ex in perturbed.items()
    }
