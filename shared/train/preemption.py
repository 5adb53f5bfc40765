"""SIGTERM (preemption) as a flag that training code checks at safe points.

`launch/run.py` calls `install()` once, so a SIGTERM anywhere in a run (data loading, baselines,
evaluation) only sets the flag: the training loop saves a checkpoint at its next step and raises
`Preempted`, and a loop that has not started yet raises it before doing any work. Library users
who never call `install()` get the same behaviour inside each loop (`watching()` installs the
handler for the loop's duration and restores the previous one after).

With several JAX processes (a pod, or `launch/run.py --processes N`) a SIGTERM may reach one
process only: `agreed()`, a collective that every process calls at the same safe points, tells
all of them, so that they stop at the same step and write one checkpoint together.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Preempted", "agreed", "check", "install", "requested", "watching"]


class Preempted(Exception):
    """A SIGTERM stopped the run; the message says what was saved."""


_flag = {"requested": False, "installed": False}


def _handler(signum, frame) -> None:  # noqa: ARG001
    _flag["requested"] = True


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install() -> None:
    """Turns SIGTERM into the flag for the rest of the process (main thread only)."""
    if _main_thread():
        signal.signal(signal.SIGTERM, _handler)
        _flag["installed"] = True


def requested() -> bool:
    """Whether this process got SIGTERM."""
    return _flag["requested"]


def agreed() -> bool:
    """Whether any process of the run got SIGTERM. With several processes this is a collective
    (an all-gather of each one's flag, milliseconds): every process must call it at the same
    points, as SPMD programs do."""
    from shared.distributed import process_count

    if process_count() == 1:
        return _flag["requested"]
    import numpy as np
    from jax.experimental import multihost_utils

    flags = multihost_utils.process_allgather(np.int32(_flag["requested"]))
    return bool(np.any(flags))


@contextlib.contextmanager
def watching() -> Iterator[None]:
    """The flag is live inside; outside an `install()`ed process the previous handler (and a
    clear flag) come back afterwards."""
    if _flag["installed"] or not _main_thread():
        yield  # signal handlers can only be installed from the main thread
        return
    previous = signal.signal(signal.SIGTERM, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _flag["requested"] = False


def check(where: str) -> None:
    """A safe point of a run without a training loop (a project's loop over samplers, problems,
    cells): raises `Preempted` once SIGTERM came. Such runs keep no checkpoints (each unit takes
    seconds at the `cpu` scale), so a rerun starts them over; the message says so."""
    if agreed():
        raise Preempted(f"SIGTERM before {where}; nothing saved (a rerun starts this run over)")
