"""A reusable training loop over a jitted step, with checkpoints, resume and clean stops.

- Checkpoints: the loop owns them. Given `checkpoint_dir`, it opens an orbax `Checkpointer` there,
  saves every `checkpoint_every` steps and at the end, and always closes it (also on errors).
- Resume: when `checkpoint_dir` holds a checkpoint, training continues from it (state, step and
  the input iterator's position), so a killed and restarted run ends where an unbroken one does.
  `latest_checkpoint_step(dir)` tells a caller where a run will resume before it loops.
- SIGTERM (preemption): the loop saves a checkpoint at the current step and raises `Preempted`;
  `launch/run.py` turns that into exit code 0.
- A NaN or inf loss raises `NonFiniteLossError` naming the first bad step.
- A tqdm progress bar shows loss and throughput; `metrics.jsonl` gets one line per log interval.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pathlib
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import jax
import numpy as np
from tqdm.auto import tqdm

from shared.train.checkpoint import Checkpointer, latest_checkpoint_step

__all__ = [
    "NonFiniteLossError",
    "Preempted",
    "StatefulIterator",
    "latest_checkpoint_step",
    "train_loop",
]


class Preempted(Exception):
    """Raised after a SIGTERM once a checkpoint is safely written."""


class NonFiniteLossError(FloatingPointError):
    """The loss became NaN or inf."""


class StatefulIterator(Protocol):
    def __next__(self) -> Any: ...
    def get_state(self) -> dict: ...
    def set_state(self, state: dict) -> None: ...


@contextlib.contextmanager
def _sigterm_flag() -> Iterator[dict]:
    flag = {"set": False}
    if threading.current_thread() is not threading.main_thread():
        yield flag  # signal handlers can only be installed from the main thread
        return
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):  # noqa: ARG001
        flag["set"] = True

    signal.signal(signal.SIGTERM, handler)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGTERM, previous)


def _append_jsonl(path: pathlib.Path | None, record: dict) -> None:
    if path is None:
        return
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def train_loop(
    *,
    state: Any,
    step_fn: Callable[[Any, Any, jax.Array], tuple[Any, dict[str, jax.Array]]],
    batches: StatefulIterator,
    num_steps: int,
    checkpoint_dir: pathlib.Path | None = None,
    checkpoint_every: int = 0,
    metrics_path: pathlib.Path | None = None,
    name: str = "train",
    items_per_step: int = 1,
    log_every: int = 50,
) -> Any:
    """Runs `state, metrics = step_fn(state, batch, step)` for steps [start, num_steps).

    `metrics` must hold a scalar "loss". Returns the final state. `checkpoint_dir` (absolute;
    a relative one is taken from the working directory; None: no checkpoints, no resume) holds
    this loop's checkpoints: `start` is its latest step. `checkpoint_every=0` saves only at the
    end (and on SIGTERM).
    """
    checkpointer = None if checkpoint_dir is None else Checkpointer(checkpoint_dir)
    try:
        return _run(
            state, step_fn, batches, num_steps, checkpointer, checkpoint_every, metrics_path,
            name, items_per_step, log_every,
        )  # fmt: skip
    finally:
        if checkpointer is not None:
            checkpointer.close()


def _run(
    state: Any,
    step_fn: Callable,
    batches: StatefulIterator,
    num_steps: int,
    checkpointer: Checkpointer | None,
    checkpoint_every: int,
    metrics_path: pathlib.Path | None,
    name: str,
    items_per_step: int,
    log_every: int,
) -> Any:
    start = 0
    if checkpointer is not None and checkpointer.latest_step() is not None:
        start, state, data_state, _ = checkpointer.restore(state)
        batches.set_state(data_state)
    if start >= num_steps:
        return state

    def save(step: int) -> None:
        if checkpointer is not None:
            checkpointer.save(step, state, batches.get_state(), {"name": name})

    disable = not sys.stderr.isatty() or os.environ.get("TQDM_DISABLE") == "1"
    bar = tqdm(total=num_steps, initial=start, desc=name, disable=disable, dynamic_ncols=True)
    pending: list[tuple[int, dict[str, jax.Array]]] = []
    t_last, n_last = time.perf_counter(), 0

    def flush() -> None:
        nonlocal t_last, n_last
        if not pending:
            return
        host = jax.device_get(pending)
        for s, m in host:
            loss = float(m["loss"])
            if not math.isfinite(loss):
                raise NonFiniteLossError(
                    f"{name}: loss is {loss} at step {s}; lower the learning rate, check the "
                    "inputs for NaN/inf, or resume from the last checkpoint"
                )
        now = time.perf_counter()
        rate = n_last * items_per_step / max(now - t_last, 1e-9)
        last_step, last = host[-1]
        record = {"phase": name, "step": last_step + 1, "items_per_s": rate}
        record.update({k: float(np.mean([float(m[k]) for _, m in host])) for k in last})
        _append_jsonl(metrics_path, record)
        bar.set_postfix(loss=f"{record['loss']:.4g}", rows_s=f"{rate:.0f}")
        pending.clear()
        t_last, n_last = now, 0

    with _sigterm_flag() as sigterm:
        try:
            for step in range(start, num_steps):
                state, metrics = step_fn(state, next(batches), step)
                pending.append((step, metrics))
                n_last += 1
                bar.update(1)
                last = step + 1 == num_steps
                if len(pending) >= log_every or last or sigterm["set"]:
                    flush()
                if sigterm["set"]:
                    save(step + 1)
                    raise Preempted(f"{name}: SIGTERM at step {step + 1}; checkpoint saved")
                if checkpoint_every and (step + 1) % checkpoint_every == 0 and not last:
                    save(step + 1)
        finally:
            bar.close()
    save(num_steps)
    return state
