"""What the kernel tells about processes, for the benchmarks: each thread's time on a
CPU and on a run queue (``/proc/<pid>/task/<tid>/schedstat``), its preemptions
(``nonvoluntary_ctxt_switches``) and a process's CPU ticks (``/proc/<pid>/stat``).
The parsers are pure (tests/env/test_bench_fabric_delay.py); the readers skip a
process or thread that ended meanwhile."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SchedStat:
    """One task's /proc schedstat: time on a CPU and waiting on a run queue (ns), and
    how many timeslices it ran."""

    cpu_ns: int
    wait_ns: int
    slices: int

    def __add__(self, other: SchedStat) -> SchedStat:
        return SchedStat(self.cpu_ns + other.cpu_ns, self.wait_ns + other.wait_ns, self.slices + other.slices)

    def __sub__(self, other: SchedStat) -> SchedStat:
        return SchedStat(self.cpu_ns - other.cpu_ns, self.wait_ns - other.wait_ns, self.slices - other.slices)


ZERO = SchedStat(0, 0, 0)


def parse_schedstat(text: str) -> SchedStat:
    """``/proc/<pid>[/task/<tid>]/schedstat``: three numbers, time on a CPU (ns),
    time waiting on a run queue (ns), timeslices run."""
    cpu, wait, slices = (int(x) for x in text.split()[:3])
    return SchedStat(cpu, wait, slices)


def parse_stat_cpu_ticks(text: str) -> int:
    """utime + stime (clock ticks) of ``/proc/<pid>/stat``: fields 14 and 15, counted
    after the command name in parentheses, which may itself hold spaces and ')'."""
    rest = text[text.rindex(")") + 2:].split()  # rest[0] is field 3 (state)
    return int(rest[11]) + int(rest[12])


def threads_of(pid: int) -> list[int]:
    try:
        return [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return []


def sched_of(pids: Iterable[int]) -> SchedStat:
    total = ZERO
    for pid in pids:
        for tid in threads_of(pid):
            try:
                total = total + parse_schedstat(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text())
            except (OSError, ValueError):
                pass
    return total


def parse_involuntary(text: str) -> int:
    """``nonvoluntary_ctxt_switches`` of a ``/proc/<pid>/status``: how many times the
    task was taken off its CPU while it could still run (preempted)."""
    for line in text.splitlines():
        if line.startswith("nonvoluntary_ctxt_switches:"):
            return int(line.split()[1])
    return 0


def involuntary_of(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        for tid in threads_of(pid):
            try:
                total += parse_involuntary(Path(f"/proc/{pid}/task/{tid}/status").read_text())
            except (OSError, ValueError):
                pass
    return total


def cpu_ticks_of(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += parse_stat_cpu_ticks(Path(f"/proc/{pid}/stat").read_text())
        except (OSError, ValueError, IndexError):
            pass
    return total
