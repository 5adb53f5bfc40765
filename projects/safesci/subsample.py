"""The official variance protocol: `num_experiments = 5` random subsets of int(0.34 n) items,
each scored, reported as mean and sample standard deviation (ddof = 1) of the five scores.
The official code draws the subsets with Python's unseeded `random.sample`; here a seeded NumPy
generator draws them, so a table repeats exactly (the spec: fix the subsampling seed).
"""

from __future__ import annotations

import numpy as np

NUM_SUBSETS, FRACTION = 5, 0.34


def subsets(n: int, seed: int, num: int = NUM_SUBSETS, fraction: float = FRACTION) -> np.ndarray:
    """[num, int(fraction n)] item indices, each row drawn without replacement."""
    size = int(n * fraction)
    if size < 1:
        raise ValueError(f"{n} items: a {fraction:.0%} subset would be empty; score more items")
    rng = np.random.default_rng(seed)
    return np.stack([rng.choice(n, size, replace=False) for _ in range(num)])


def subset_scores(values: np.ndarray, seed: int, num: int = NUM_SUBSETS) -> np.ndarray:
    """Per-item values [n] (0/1, or NaN for an item the metric leaves out, as the official code
    drops empty responses before it subsamples) -> each subset's mean in percent [num]."""
    values = np.asarray(values, np.float64)
    kept = values[~np.isnan(values)]
    return 100.0 * kept[subsets(len(kept), seed, num)].mean(axis=1)


def mean_sd(scores: np.ndarray) -> tuple[float, float]:
    """(mean, sample sd with ddof = 1) of subset scores, as the official code reports."""
    scores = np.asarray(scores, np.float64)
    return float(np.mean(scores)), float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0
