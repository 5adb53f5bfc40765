"""SIGTERM (preemption) as a flag that training code checks at safe points.

`launch/run.py` calls `install()` once, so a SIGTERM anywhere in a run (data loading, baselines,
evaluation) only sets the flag: the training loop saves a checkpoint at its next step and raises
`Preempted`, and a loop that has not started yet raises it before doing any work. Library users
who never call `install()` get the same behaviour inside each loop (`watching()` installs the
handler for the loop's duration and restores the previous one after).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["Preempted", "check", "install", "requested", "watching"]


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
    return _flag["requested"]


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
    if _flag["requested"]:
        raise Preempted(f"SIGTERM before {where}; nothing saved (a rerun starts this run over)")
