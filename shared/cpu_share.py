"""Other processes' share of the machine's CPU time during a timed interval (Linux /proc).

    share = (busy ticks of all CPUs - this process's ticks) / all ticks of all CPUs

from `/proc/stat` (machine) and `/proc/self/stat` (utime + stime of every thread of this process).
Both count clock ticks (10 ms on most kernels), so on a short interval the share is coarse: a
0.1 s step on 2 CPUs spans ~20 ticks, one tick of another process is 5%. Benchmarks keep steps
whose share stays under a threshold ("clean" steps) and report how many there were. No jax here,
so that non-JAX baselines can import it.
"""

from __future__ import annotations

import os


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) ticks over all CPUs since boot."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already inside user)
    total = sum(fields[:8])
    idle = fields[3] + fields[4]
    return total - idle, total


def _own_ticks() -> int:
    with open("/proc/self/stat") as f:
        # the command name may contain spaces: split after its closing parenthesis
        rest = f.read().rsplit(")", 1)[1].split()
    return int(rest[11]) + int(rest[12])  # utime, stime (fields 14 and 15 of proc(5))


class CpuShare:
    """`start()` before an interval, `stop()` after it -> other processes' share in [0, 1]
    (NaN where /proc is not available or the interval spans no tick)."""

    def __init__(self):
        self.available = os.path.exists("/proc/stat") and os.path.exists("/proc/self/stat")
        self._t0: tuple[int, int, int] | None = None

    def start(self) -> None:
        if self.available:
            busy, total = _machine_ticks()
            self._t0 = (busy, total, _own_ticks())

    def stop(self) -> float:
        if not self.available or self._t0 is None:
            return float("nan")
        busy, total = _machine_ticks()
        own = _own_ticks()
        b0, t0, o0 = self._t0
        if total == t0:
            return float("nan")
        return max(0.0, (busy - b0) - (own - o0)) / (total - t0)
