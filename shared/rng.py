"""Named PRNG streams from one seed.

One root key from the seed is split once into named streams (`init`, `data`, `dropout`, ...).
Inside a step, `step_key(stream, step)` folds the step in, so a resumed run draws exactly the
numbers an unbroken run would have drawn.
"""

from __future__ import annotations

import hashlib

import jax
import numpy as np


def _name_to_int(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little")


def stream(seed: int, name: str) -> jax.Array:
    """The key of stream `name` for run seed `seed` (independent of which other streams exist)."""
    return jax.random.fold_in(jax.random.key(seed), _name_to_int(name))


def streams(seed: int, *names: str) -> dict[str, jax.Array]:
    return {n: stream(seed, n) for n in names}


def step_key(key: jax.Array, step: int | jax.Array) -> jax.Array:
    """`fold_in(key, step)`: the per-step key, usable inside jit with a traced step."""
    return jax.random.fold_in(key, step)


def numpy_rng(seed: int, name: str, step: int = 0) -> np.random.Generator:
    """A numpy generator for host-side sampling, deterministic in (seed, name, step)."""
    return np.random.default_rng([seed, _name_to_int(name), step])
