"""grain input pipelines over in-memory arrays, with exact resume state."""

from __future__ import annotations

from collections.abc import Mapping

import grain
import numpy as np

from shared.distributed import host_batch_slice


def batch_iterator(
    arrays: Mapping[str, np.ndarray],
    batch_size: int,
    seed: int,
    *,
    shuffle: bool = True,
    process_rows: bool = False,
) -> grain.DatasetIterator:
    """An endless iterator of dict batches `{name: array[batch_size, ...]}`.

    Rows are reshuffled every epoch (seeded); the last partial batch of an epoch is dropped.
    The iterator's `get_state()`/`set_state()` give exact resume.

    `process_rows`: each JAX process reads only its rows `host_batch_slice(batch_size)` of every
    global batch (multi-host data parallelism, `shared.distributed.global_batch` assembles them);
    every process draws the same global order, so the global batch of a step is the one a single
    process would see, whatever the number of processes.
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
    rows = host_batch_slice(batch_size) if process_rows else slice(None)
    ds = ds.map(lambda idx: {k: v[np.asarray(idx)[rows]] for k, v in arrays.items()})
    # On CPU, worker processes cost seconds to start and threads gain nothing for in-memory data.
    return iter(ds.to_iter_dataset(grain.ReadOptions(num_threads=0, prefetch_buffer_size=0)))
