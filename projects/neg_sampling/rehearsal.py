"""Rehearsal of the `paper` config (shared/rehearsal.py): LightGCN + BPR with the uniform and R2
samplers (R2's prior chosen on validation from two values), on a small MovieLens `ratings.csv`
(`userId,movieId,rating,timestamp`, read by `movielens.read_ratings_csv`; the paper's Gowalla /
Yelp2018 have no loader here and the paper config draws the synthetic graph), embeddings of 8,
2 epochs. Training is one jitted scan per block of epochs on one device; a preempted run
restarts the sampler it was in (no orbax checkpoints).

    python launch/rehearse.py projects/neg_sampling
"""

from __future__ import annotations

import pathlib

import numpy as np

from shared.rehearsal import Rehearsal

USERS, MOVIES, PER_USER = 60, 90, 30


def write_ratings(directory: pathlib.Path) -> tuple[str, ...]:
    """ratings.csv as MovieLens ships it: half-star ratings, sparse movie ids, a timestamp."""
    rng = np.random.default_rng(0)
    movie_ids = np.sort(rng.choice(200_000, MOVIES, replace=False)) + 1
    popularity = rng.dirichlet(np.full(MOVIES, 0.5))
    lines = ["userId,movieId,rating,timestamp"]
    for u in range(1, USERS + 1):
        for m in rng.choice(MOVIES, PER_USER, replace=False, p=popularity):
            rating = rng.integers(1, 11) / 2
            lines.append(f"{u},{movie_ids[m]},{rating:.1f},{1_100_000_000 + u * 1000 + m}")
    ml = directory / "movielens"
    ml.mkdir(parents=True, exist_ok=True)
    (ml / "ratings.csv").write_text("\n".join(lines) + "\n")
    return ("dataset='movielens'", f"movielens_dir={str(ml)!r}")


REHEARSAL = Rehearsal(
    data="synthetic graph (paper config); rehearsed on MovieLens ratings.csv via movielens_dir",
    write_data=write_ratings,
    shrink=(
        # each sampler is one more compilation; every sampler has its own unit tests
        "samplers=('uniform', 'r2')",
        "r2_pi_grid=(0.01, 0.3)",
        "train.dim=8",
        "train.batch_size=64",
        "train.epochs=2",
        "train.eval_every=1",
        "sampler.n_negs=8",
        "pool_size=8",
    ),
)
