"""Implicit-feedback data with a known truth: a synthetic bipartite graph (spec §5) and the split.

`Interactions` holds the true edge set (what an oracle knows), the observed edges split 80/10/10
into train / validation / test, and the hidden true positives (never observed). Unbiased
observation keeps each true edge with probability q; biased observation (missing not at random)
keeps an edge of item i with q_i ∝ popularity_i^κ, rescaled so the mean keep rate over true edges
is q.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import expit


@dataclasses.dataclass(frozen=True)
class Interactions:
    """Edge lists are (user, item) int arrays [E, 2]; dense masks are [U, I] bool."""

    num_users: int
    num_items: int
    train: np.ndarray
    valid: np.ndarray
    test: np.ndarray
    hidden: np.ndarray  # true positives that were never observed
    true_pos: np.ndarray  # [U, I] bool: every true positive (observed or hidden)

    def mask(self, *parts: str) -> np.ndarray:
        """[U, I] bool of the union of the named edge lists."""
        m = np.zeros((self.num_users, self.num_items), bool)
        for p in parts:
            e = getattr(self, p)
            m[e[:, 0], e[:, 1]] = True
        return m

    def summary(self) -> dict[str, float]:
        return {
            "users": self.num_users,
            "items": self.num_items,
            "true_edges": int(self.true_pos.sum()),
            "train": len(self.train),
            "valid": len(self.valid),
            "test": len(self.test),
            "hidden": len(self.hidden),
        }


def _keep_rates(pop: np.ndarray, kappa: float, mean_keep: float, weights: np.ndarray) -> np.ndarray:
    """q_i = min(1, c · pop_i^κ) with c set by bisection so Σ_i w_i q_i / Σ_i w_i = mean_keep."""
    base = np.maximum(pop, 1.0) ** kappa
    lo, hi = 0.0, 1.0 / base.min()
    for _ in range(100):
        c = 0.5 * (lo + hi)
        q = np.minimum(1.0, c * base)
        if (weights * q).sum() / weights.sum() < mean_keep:
            lo = c
        else:
            hi = c
    return np.minimum(1.0, 0.5 * (lo + hi) * base)


def true_preferences(
    num_users: int, num_items: int, dim: int, temperature: float, density: float, seed: int
) -> np.ndarray:
    """P(u, i) = σ(⟨x_u, y_i⟩/temperature + b_i + b_0), latents ~ N(0, I/dim), b_i ~ N(0, 1),
    b_0 by bisection so that the mean of P equals `density`. Returns [U, I] float64."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(num_users, dim)) / np.sqrt(dim)
    y = rng.normal(size=(num_items, dim)) / np.sqrt(dim)
    logits = x @ y.T / temperature + rng.normal(size=num_items)[None, :]
    lo, hi = -50.0, 50.0
    for _ in range(40):  # bisection to ~1e-10 in b_0
        b0 = 0.5 * (lo + hi)
        if expit(logits + b0).mean() < density:
            lo = b0
        else:
            hi = b0
    return expit(logits + 0.5 * (lo + hi))


def observe_and_split(
    true_pos: np.ndarray,
    keep: float,
    bias_kappa: float | None,
    fractions: tuple[float, float, float],
    rng: np.random.Generator,
    per_user: bool = False,
) -> Interactions:
    """Observe the true edges (unbiased if bias_kappa is None) and split the observed ones:
    over all edges at random, or within each user (`per_user`, see `split_per_user`)."""
    num_users, num_items = true_pos.shape
    edges = np.argwhere(true_pos)  # [E, 2], row-major order
    if bias_kappa is None:
        q = np.full(len(edges), keep)
    else:
        pop = true_pos.sum(0).astype(np.float64)
        q_item = _keep_rates(pop, bias_kappa, keep, weights=pop)  # mean over true edges
        q = q_item[edges[:, 1]]
    seen = rng.random(len(edges)) < q
    observed, hidden = edges[seen], edges[~seen]
    if per_user:
        train, valid, test = split_per_user(observed, fractions, rng)
    else:
        observed = observed[rng.permutation(len(observed))]
        n_train = int(round(fractions[0] * len(observed)))
        n_valid = int(round(fractions[1] * len(observed)))
        train = observed[:n_train]
        valid = observed[n_train : n_train + n_valid]
        test = observed[n_train + n_valid :]
    return Interactions(
        num_users=num_users,
        num_items=num_items,
        train=train,
        valid=valid,
        test=test,
        hidden=hidden,
        true_pos=true_pos,
    )


def split_per_user(
    edges: np.ndarray, fractions: tuple[float, float, float], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, valid, test) edge lists [E_*, 2] with each user's edges split by `fractions`
    (the real-data protocol: e.g. 20% of every user's positives are test). Per user, test gets
    round(f_test · n) and validation round(f_valid · n) edges, the rest train, so a user with
    few positives keeps them in train rather than losing every training edge."""
    edges = edges[rng.permutation(len(edges))]
    edges = edges[np.argsort(edges[:, 0], kind="stable")]  # grouped by user, shuffled within
    starts = np.searchsorted(edges[:, 0], edges[:, 0], side="left")
    counts = np.bincount(edges[:, 0])[edges[:, 0]]
    rank = np.arange(len(edges)) - starts  # position of the edge inside its user's group
    n_test = np.round(fractions[2] * counts)
    n_valid = np.round(fractions[1] * counts)
    is_test = rank < n_test
    is_valid = ~is_test & (rank < n_test + n_valid)
    return edges[~is_test & ~is_valid], edges[is_valid], edges[is_test]


def synthetic(
    num_users: int,
    num_items: int,
    dim: int,
    temperature: float,
    density: float,
    keep: float,
    bias_kappa: float | None,
    seed: int,
) -> Interactions:
    """The spec's synthetic graph: one true edge set per seed, then the observation and split."""
    rng = np.random.default_rng([seed, 1])
    prob = true_preferences(num_users, num_items, dim, temperature, density, seed)
    true_pos = rng.random(prob.shape) < prob
    return observe_and_split(true_pos, keep, bias_kappa, (0.8, 0.1, 0.1), rng)


def negative_pool(forbidden: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """[U, size] items drawn uniformly (with replacement) among each user's allowed items.

    Samplers replace a rejected candidate (a forbidden item) with an entry of this pool, which
    makes "never a forbidden item" hold by construction. forbidden: [U, I] bool."""
    num_users, num_items = forbidden.shape
    allowed_counts = num_items - forbidden.sum(1)
    if allowed_counts.min() < 1:
        u = int(np.argmin(allowed_counts))
        raise ValueError(f"user {u} has no allowed item: every item is forbidden for it")
    # r-th allowed item of each row via the cumulative count of allowed items
    cum = np.cumsum(~forbidden, axis=1)  # [U, I]
    r = rng.integers(0, allowed_counts[:, None], size=(num_users, size)) + 1
    pool = np.stack([np.searchsorted(cum[u], r[u]) for u in range(num_users)])
    return pool.astype(np.int32)
