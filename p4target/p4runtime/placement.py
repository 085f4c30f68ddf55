"""Keep every thread of the P4Runtime server's process on one CPU.

Why: one unary P4Runtime call goes through about a dozen thread hand-offs inside the
server process (gRPC's event-engine threads read the socket, its Python poller thread
picks the call up, a worker thread of the pool runs the handler, and back). On this
project's VMs a wake-up that crosses cores costs tens of microseconds, one on the same
core a few; the GIL lets only one of these threads run Python at a time anyway. So a
process whose threads all stay on one CPU answers single-entry writes with less CPU
and less waiting (figures in docs/p4runtime.md).

``resolve_cpu`` turns the user's choice into a CPU number (or None: leave the kernel
to place the threads); ``pin_process`` applies it to every thread the process has, and
threads started later inherit it from the thread that starts them.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

AUTO = "auto"  # one CPU chosen by device id among those the process may use
ANY = "any"  # no pinning: the kernel places the threads


class PlacementError(ValueError):
    """A CPU choice this process cannot honour; the message says what to give instead."""


def parse_cpu(text: str) -> int | str:
    """``auto``, ``any`` or a CPU number (>= 0); ValueError with the accepted forms."""
    t = text.strip().lower()
    if t in (AUTO, ANY):
        return t
    try:
        n = int(t, 10)
    except ValueError:
        raise ValueError(f"{text!r} is not a CPU: give a CPU number (0, 1, ...), 'auto' or 'any'") from None
    if n < 0:
        raise ValueError(f"{text!r} is not a CPU: CPU numbers start at 0")
    return n


def allowed_cpus() -> list[int]:
    """The CPUs the calling thread may run on, in order."""
    return sorted(os.sched_getaffinity(0))


def _span(cpus: list[int]) -> str:
    return ", ".join(str(c) for c in cpus)


def resolve_cpu(choice: int | str | None, device_id: int, allowed: list[int] | None = None) -> int | None:
    """The CPU to keep the process on, or None for no pinning.

    ``auto`` takes ``allowed[device_id % len(allowed)]``, so switches numbered 1..N on
    one machine spread evenly over its CPUs; a process that may use only one CPU is
    left as it is. ``any`` or None: no pinning. A number must be one of ``allowed``.
    """
    cpus = allowed_cpus() if allowed is None else sorted(allowed)
    if choice is None or choice == ANY:
        return None
    if choice == AUTO:
        if len(cpus) <= 1:
            return None
        return cpus[device_id % len(cpus)]
    if isinstance(choice, bool) or not isinstance(choice, int):
        raise PlacementError(f"CPU choice {choice!r} is not a CPU number, 'auto' or 'any'")
    if choice not in cpus:
        raise PlacementError(f"CPU {choice} is not available to this process (it may use CPU {_span(cpus)}); "
                             "give one of those, 'auto' or 'any'")
    return choice


def process_threads() -> list[int]:
    """Native ids of the threads of this process now."""
    return [int(t) for t in os.listdir("/proc/self/task")]


def pin_process(cpu: int) -> int:
    """Put every thread of this process on ``cpu``; returns how many were moved.

    Scans until a pass finds no thread left to move: a thread started during a scan
    by a thread not yet moved would otherwise keep the old affinity.
    """
    target = {cpu}
    done: set[int] = set()
    while True:
        todo = [tid for tid in process_threads() if tid not in done]
        if not todo:
            return len(done)
        for tid in todo:
            try:
                os.sched_setaffinity(tid, target)
            except ProcessLookupError:  # the thread ended meanwhile
                pass
            done.add(tid)
