"""How a switch process asks the kernel for the CPU: its nice value and time slice.

Why: a software switch holds every frame it has read until its loop runs again, so a
frame's delay includes every moment its process waits for a CPU. On a machine where
the switches share the cores with hosts and other work, that wait, not the pipeline,
is what makes the tail. Linux (6.6 and later: EEVDF) lets a thread ask for a larger
share (a lower nice value: a weight, about 1.25 times per step) and for a shorter
time slice (``sched_setattr``'s ``sched_runtime``, Linux 6.12 and later: a thread that
wakes with a short slice gets an earlier deadline and runs sooner, with the same
share of the CPU). Neither makes a busy machine run a woken switch at once: the
thread still waits for the running one to reach a preemption point (measured in
docs/performance.md). A real-time policy does: a SCHED_RR thread preempts every
SCHED_OTHER thread as soon as it wakes, and the kernel still keeps a share of every
CPU for the others (``/proc/sys/kernel/sched_rt_runtime_us``, and the fair server of
Linux 6.12 and later), so a switch that runs flat out cannot lock the machine up.
All of these are per thread in Linux; a thread started later inherits them from the
thread that starts it.
"""

from __future__ import annotations

import ctypes
import os
import struct
from collections.abc import Callable

SYS_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(os.uname().machine)
# struct sched_attr (SCHED_ATTR_SIZE_VER0): size, policy, flags, nice, priority, runtime, deadline, period
_SCHED_ATTR = struct.Struct("=IIQiIQQQ")
SLICE_MIN_US, SLICE_MAX_US = 100, 100_000  # the kernel clamps sched_runtime to 0.1-100 ms
RT_MIN, RT_MAX = 1, 99  # SCHED_RR priorities


def set_fair(tid: int, nice: int, slice_us: int = 0) -> None:
    """Thread ``tid`` (0: the calling thread) to SCHED_OTHER with ``nice`` and, when
    ``slice_us``, that time slice (0: the kernel's own; a slice set before is undone).
    Raises OSError (EPERM without CAP_SYS_NICE for a lower nice value)."""
    if SYS_SCHED_SETATTR is None:
        if slice_us:
            raise OSError(38, "sched_setattr: not known on this machine; leave the slice out")
        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        return
    # sched_setattr, also without a slice: sched_setscheduler keeps a slice set before
    attr = ctypes.create_string_buffer(_SCHED_ATTR.pack(_SCHED_ATTR.size, os.SCHED_OTHER, 0, nice, 0,
                                                        slice_us * 1000, 0, 0))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_SCHED_SETATTR, tid, attr, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"sched_setattr: {os.strerror(err)}")


def set_realtime(tid: int, priority: int) -> None:
    """Thread ``tid`` (0: the calling thread) to SCHED_RR at ``priority`` (1..99).
    Raises OSError (EPERM without CAP_SYS_NICE)."""
    os.sched_setscheduler(tid, os.SCHED_RR, os.sched_param(priority))


def for_every_thread(setting: Callable[[int], None]) -> int:
    """``setting(tid)`` for every thread of this process, until a scan finds none left
    (a thread started meanwhile inherits from one not yet set); how many it set."""
    done: set[int] = set()
    while True:
        todo = [int(t) for t in os.listdir("/proc/self/task") if int(t) not in done]
        if not todo:
            return len(done)
        for tid in todo:
            try:
                setting(tid)
            except ProcessLookupError:  # the thread ended meanwhile
                pass
            done.add(tid)


def thread_slice_ns(tid: int) -> int | None:
    """The time slice the kernel gives thread ``tid`` now (``se.slice`` of its
    ``/proc/<tid>/sched``, a debug file some kernels lack): None when unknown."""
    try:
        text = open(f"/proc/{tid}/sched").read()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("se.slice"):
            return int(float(line.split(":")[1]))
    return None
