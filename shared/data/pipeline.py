"""grain input pipelines over in-memory arrays, with exact resume state."""

from __future__ import annotations

from collections.abc import Mapping

import grain
import numpy as np


def batch_iterator(
    arrays: Mapping[str, np.ndarray], batch_size: int, seed: int, *, shuffle: bool = True
) -> grain.DatasetIterator:
    """An endless iterator of dict batches `{name: array[batch_size, ...]}`.

    Rows are reshuffled every epoch (seeded); the last partial batch of an epoch is dropped.
    The iterator's `get_state()`/`set_state()` give exact resume.
    """
    n = len(next(iter(arrays.values())))
    if any(len(a) != n for a in arrays.values()):
        raise ValueError(f"arrays differ in length: { {k: len(a) for k, a in arrays.items()} }")
    if batch_size > n:
        raise ValueError(f"batch_size={batch_size} exceeds the {n} available rows; lower it")
    ds = grain.MapDataset.range(n)
    if shuffle:
        ds = ds.seed(seed).shuffle()
    ds = ds.repeat().batch(batch_size, drop_remainder=True)
    ds = ds.map(lambda idx: {k: v[np.asarray(idx)] for k, v in arrays.items()})
    # On CPU, worker processes cost seconds to start and threads gain nothing for in-memory data.
    return iter(ds.to_iter_dataset(grain.ReadOptions(num_threads=0, prefetch_buffer_size=0)))
