"""A reusable training loop over a jitted step, with checkpoints, resume and clean stops.

- Checkpoints: the loop owns them. Given `checkpoint_dir`, it opens an orbax `Checkpointer` there,
  saves every `checkpoint_every` steps and at the end, and always closes it (also on errors).
  Before every save the losses of the steps since the last log row and the parameters are
  checked: a state with NaN/inf is never saved.
- Resume: when `checkpoint_dir` holds a checkpoint, training continues from it (state, step, the
  input iterator's position and the metrics of a log interval not yet written), says so on
  stderr, and drops metrics.jsonl rows of this phase logged after that checkpoint, so the file
  of a killed and resumed run has exactly the rows of an unbroken one.
  `latest_checkpoint_step(dir)` tells a caller where a run will resume before it loops.
- SIGTERM (preemption, `shared.train.preemption`): the loop saves a checkpoint at the current
  step and raises `Preempted`; a SIGTERM before the loop starts stops it before any work.
- A NaN or inf loss raises `NonFiniteLossError` naming the step (counted as metrics.jsonl counts
  steps: the first update is step 1) and the last good checkpoint.
- Progress: a tqdm bar on a terminal; otherwise (nohup, SLURM, `| tee`) a plain line on stderr
  with step, loss, throughput and ETA at the first log row, then at most every
  `PROGRESS_EVERY_S` seconds (default 30), and at the last step.
  `metrics.jsonl` gets one line per log interval, at steps that are multiples of `log_every`.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from shared.distributed import is_primary
from shared.train import preemption
from shared.train.checkpoint import Checkpointer, latest_checkpoint_step
from shared.train.preemption import Preempted

__all__ = [
    "DivergedError",
    "NonFiniteLossError",
    "Preempted",
    "StatefulIterator",
    "latest_checkpoint_step",
    "train_loop",
]


class NonFiniteLossError(FloatingPointError):
    """The loss (or the parameters) became NaN or inf; nothing from that step on was saved."""


class DivergedError(FloatingPointError):
    """The run diverged (e.g. its loss reached the uniform model's); its numbers mean nothing."""


class StatefulIterator(Protocol):
    def __next__(self) -> Any: ...
    def get_state(self) -> dict: ...
    def set_state(self, state: dict) -> None: ...


@jax.jit
def _all_finite(tree: Any) -> jax.Array:
    leaves = [jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree) if _is_float(x)]
    return jnp.all(jnp.stack(leaves)) if leaves else jnp.bool_(True)


def _is_float(x: Any) -> bool:
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _drop_rows_after(path: pathlib.Path | None, name: str, step: int) -> None:
    """Removes this phase's metrics.jsonl rows past `step` (logged after the checkpoint that a
    resumed run starts from, so the resumed run logs them again)."""
    if path is None or not path.exists() or not is_primary():
        return
    lines = path.read_text().splitlines(keepends=True)
    keep = [
        line
        for line in lines
        if not ((r := json.loads(line)).get("phase") == name and r.get("step", 0) > step)
    ]
    if len(keep) != len(lines):
        path.write_text("".join(keep))


def _append_jsonl(path: pathlib.Path | None, record: dict) -> None:
    if path is None or not is_primary():
        return
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


# When each phase last printed a plain progress line: a phase run in segments (one loop call per
# evaluation point) keeps one interval.
_progress_shown: dict[str, float] = {}


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


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
    announce: bool = True,
    total_steps: int | None = None,
) -> Any:
    """Runs `state, metrics = step_fn(state, batch, step)` for steps [start, num_steps).

    `metrics` must hold a scalar "loss". Returns the final state. `checkpoint_dir` (absolute;
    a relative one is taken from the working directory; None: no checkpoints, no resume) holds
    this loop's checkpoints: `start` is its latest step. `checkpoint_every=0` saves only at the
    end (and on SIGTERM). A caller that runs one phase in segments (training up to each
    evaluation point) passes `announce=False` after the first, to keep continuing from the
    checkpoint it just wrote quiet, and the phase's `total_steps` for the progress display.
    """
    if num_steps < 0 or checkpoint_every < 0 or log_every < 1:
        raise ValueError(
            f"{name}: num_steps={num_steps} and checkpoint_every={checkpoint_every} must be >= 0 "
            f"and log_every={log_every} >= 1"
        )
    checkpointer = None if checkpoint_dir is None else Checkpointer(checkpoint_dir)
    try:
        with preemption.watching():
            return _Run(
                step_fn, batches, num_steps, checkpointer, checkpoint_every, metrics_path,
                name, items_per_step, log_every, announce, total_steps or num_steps,
            ).loop(state)  # fmt: skip
    finally:
        if checkpointer is not None:
            checkpointer.close()


class _Run:
    """One call of `train_loop`: the state that its helpers share (pending metrics, the last
    saved step, progress reporting)."""

    def __init__(
        self, step_fn, batches, num_steps, checkpointer, checkpoint_every, metrics_path, name,
        items_per_step, log_every, announce, total_steps,
    ):  # fmt: skip
        self.step_fn, self.batches, self.num_steps = step_fn, batches, num_steps
        self.checkpointer, self.checkpoint_every = checkpointer, checkpoint_every
        self.metrics_path, self.name = metrics_path, name
        self.items_per_step, self.log_every = items_per_step, log_every
        self.announce, self.total_steps = announce, total_steps
        self.pending: list[tuple[int, Any]] = []  # (step, metrics) not yet in a log row
        self.saved: int | None = None  # the newest step on disk
        self.t_last, self.n_last = time.perf_counter(), 0
        self.plain = not sys.stderr.isatty()
        self.progress_every = float(os.environ.get("PROGRESS_EVERY_S", "30"))
        self.last_loss = math.nan

    def loop(self, state: Any) -> Any:
        start = 0
        if self.checkpointer is not None and self.checkpointer.latest_step() is not None:
            start, state, data_state, meta = self.checkpointer.restore(state)
            self.batches.set_state(data_state)
            self.saved = start
            self.pending = [(s, m) for s, m in meta.get("pending", [])]
        if self.saved and self.announce:
            where = self.checkpointer.directory / str(start)
            print(f"{self.name}: resuming from step {start} of checkpoint {where}", file=sys.stderr)
        if self.checkpointer is not None:
            _drop_rows_after(self.metrics_path, self.name, start)
        if start >= self.num_steps:
            return state
        if preemption.agreed():
            kept = f"its checkpoint at step {start} is kept" if self.saved else "nothing saved"
            raise Preempted(f"{self.name}: SIGTERM before step {start + 1}; {kept}")
        bar = tqdm(
            total=self.total_steps, initial=start, desc=self.name, dynamic_ncols=True,
            disable=self.plain or os.environ.get("TQDM_DISABLE") == "1",
        )  # fmt: skip
        self.t_start, self.start = time.perf_counter(), start
        try:
            for step in range(start, self.num_steps):
                state, metrics = self.step_fn(state, next(self.batches), step)
                self.pending.append((step, metrics))
                self.n_last += 1
                bar.update(1)
                done = step + 1
                if done % self.log_every == 0 or done == self.num_steps:
                    self.flush(bar)
                if preemption.agreed():
                    self.save(done, state)
                    saved = "checkpoint saved" if self.checkpointer else "no checkpoint directory"
                    raise Preempted(f"{self.name}: SIGTERM at step {done}; {saved}")
                if self.checkpoint_every and done % self.checkpoint_every == 0:
                    self.save(done, state)
        finally:
            bar.close()
        self.save(self.num_steps, state)
        return state

    def host_pending(self) -> list[tuple[int, dict[str, float]]]:
        """The pending metrics on the host, after checking every loss is finite."""
        host = [(s, {k: float(v) for k, v in m.items()}) for s, m in jax.device_get(self.pending)]
        for s, m in host:
            if not math.isfinite(m["loss"]):
                self.fail(f"loss is {m['loss']} at step {s + 1}")
        self.pending = host
        return host

    def fail(self, what: str) -> None:
        if self.saved is not None:
            where = self.checkpointer.directory / str(self.saved)
            good = f"the last good checkpoint is step {self.saved} ({where}), nothing later saved"
        else:
            good = "no checkpoint of this phase was saved"
        raise NonFiniteLossError(
            f"{self.name}: {what} (steps counted as in metrics.jsonl); {good}. Lower the learning "
            "rate or check the inputs for NaN/inf, then start again with --force-new or a fresh "
            "--workdir"
        )

    def flush(self, bar: Any) -> None:
        host = self.host_pending()
        if not host:
            return
        now = time.perf_counter()
        rate = self.n_last * self.items_per_step / max(now - self.t_last, 1e-9)
        last_step, last = host[-1]
        record = {"phase": self.name, "step": last_step + 1, "items_per_s": rate}
        record.update({k: float(np.mean([m[k] for _, m in host])) for k in last})
        _append_jsonl(self.metrics_path, record)
        self.last_loss = record["loss"]
        bar.set_postfix(loss=f"{record['loss']:.4g}", rows_s=f"{rate:.0f}")
        self.pending = []
        self.t_last, self.n_last = now, 0
        shown = _progress_shown.get(self.name)
        final = last_step + 1 == self.total_steps
        if self.plain and (shown is None or final or now - shown >= self.progress_every):
            self.progress(last_step + 1, now)

    def progress(self, done: int, now: float) -> None:
        """One plain line for logs that are not a terminal."""
        elapsed = now - self.t_start
        per_step = elapsed / max(done - self.start, 1)
        eta = _duration(per_step * (self.total_steps - done))
        print(
            f"{self.name}: step {done}/{self.total_steps} ({100 * done / self.total_steps:.0f}%) "
            f"loss {self.last_loss:.4g}, {self.items_per_step / per_step:.4g} items/s, ETA {eta}",
            file=sys.stderr,
            flush=True,
        )
        _progress_shown[self.name] = now

    def save(self, step: int, state: Any) -> None:
        """Checks, then writes, a checkpoint at `step` with the metrics not yet logged."""
        if self.checkpointer is None or self.saved == step:
            return
        pending = self.host_pending()
        if not bool(_all_finite(state)):
            self.fail(f"the parameters are not finite after step {step}")
        meta = {"name": self.name, "pending": [[s, m] for s, m in pending]}
        self.checkpointer.save(step, state, self.batches.get_state(), meta)
        self.saved = step
