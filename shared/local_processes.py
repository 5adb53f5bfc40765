"""A multi-host run on one machine: N JAX processes on CPU, joined through a coordinator on
127.0.0.1 exactly as the hosts of a pod are (`shared.distributed.initialize`), so that the pod
path (collectives across processes, per-process data, collective checkpoints, preemption of one
host) runs and is tested here.

    python launch/run.py projects/scale --config smoke --set sharding=data --set batch_size=8 \
        --processes 2 --local-devices 4

Process 0's output streams through; the others' goes to log files, shown when a process fails.
When one process dies (an error, kill -9), the others are stopped at once (they would wait in
their next collective) and the command fails with a message saying which one and how it ended;
after a kill, rerunning the same command with the same --workdir resumes from the last complete
checkpoint. A run must keep its state on a mesh over every device to checkpoint (var_jepa:
`pretrain.data_parallel=True`, scale: `sharding='data'`, paso: `devices=0`); a process-local
state is refused at the first checkpoint with that advice.
A SIGTERM (or Ctrl-C) to the launcher is passed to every process: they stop at the same step,
write one checkpoint together and exit 0.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

_DEVICE_FLAG = re.compile(r"--xla_force_host_platform_device_count=\d+")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_env(index: int, count: int, port: int, local_devices: int) -> dict[str, str]:
    """The environment of process `index`: the coordinator and its place among `count`
    processes (read by shared.distributed.initialize), CPU only, `local_devices` devices."""
    flags = _DEVICE_FLAG.sub("", os.environ.get("XLA_FLAGS", "")).strip()
    return {
        **os.environ,
        "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}",
        "JAX_NUM_PROCESSES": str(count),
        "JAX_PROCESS_ID": str(index),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count={local_devices}".strip(),
    }


def _how(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


def _tail(path: pathlib.Path, lines: int = 15) -> str:
    text = path.read_text(errors="replace").splitlines() if path.exists() else []
    return "\n".join("    " + line for line in text[-lines:])


def _culprit(procs: list[subprocess.Popen]) -> int:
    """The process whose end stopped the run: its peers may fail a moment later (a collective
    that lost a member), so after a short wait a process killed by a signal is named first."""
    time.sleep(1.0)
    codes = [p.poll() for p in procs]
    signalled = [i for i, c in enumerate(codes) if c is not None and c < 0]
    return signalled[0] if signalled else next(i for i, c in enumerate(codes) if c not in (None, 0))


def run(command: list[str], count: int, local_devices: int, workdir: pathlib.Path) -> int:
    """Runs `command` (a run.py command line with its --workdir) as `count` processes; returns
    0 when every process exited 0, else the failed process's exit code (1 for a signal) after
    stopping the others."""
    if count < 2:
        raise ValueError(f"count={count}: a local multi-process run has at least 2 processes")
    port = free_port()
    logs = pathlib.Path(tempfile.mkdtemp(prefix="processes-"))
    procs: list[subprocess.Popen] = []

    def forward(signum, frame):  # noqa: ARG001
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)

    # The processes get their own session: Ctrl-C reaches the launcher alone, which turns it
    # into one SIGTERM each (a coordinated stop), not a KeyboardInterrupt at a random point.
    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    files = [open(logs / f"process-{i}.log", "w") for i in range(1, count)]  # noqa: SIM115
    try:
        for i in range(count):
            procs.append(
                subprocess.Popen(
                    command,
                    env={**process_env(i, count, port, local_devices), "PYTHONUNBUFFERED": "1"},
                    stdout=None if i == 0 else files[i - 1],
                    stderr=None if i == 0 else subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        pids = ", ".join(f"{i}: pid {p.pid}" for i, p in enumerate(procs))
        where = f"coordinator 127.0.0.1:{port}"
        print(
            f"{count} processes x {local_devices} CPU devices, {where} ({pids})",
            file=sys.stderr,
            flush=True,
        )
        while True:
            codes = [p.poll() for p in procs]
            if any(c not in (None, 0) for c in codes):
                failed = _culprit(procs)
                break
            if all(c == 0 for c in codes):
                failed = None
                break
            time.sleep(0.1)
    finally:
        for p in procs:  # on a failure, or an error of the launcher itself
            if p.poll() is None:
                p.kill()
            p.wait()
        for s, h in previous.items():
            signal.signal(s, h)
        for f in files:
            f.close()
    if failed is None:
        shutil.rmtree(logs)
        return 0
    code = procs[failed].returncode
    log = logs / f"process-{failed}.log"
    shown = "" if failed == 0 else f"; its last output ({log}):\n{_tail(log)}"
    # A killed process (preempted host, out of memory) is worth a rerun; an error says its fix.
    after = (
        f"Rerun the same command with --workdir {workdir} to resume from the last complete "
        "checkpoint"
        if code < 0
        else f"Its error is {'above' if failed == 0 else 'at the end of its output below'}"
    )
    print(
        f"error: process {failed} of {count} {_how(code)}, so the other processes were "
        f"stopped. {after}{shown}",
        file=sys.stderr,
        flush=True,
    )
    return code if code > 0 else 1
