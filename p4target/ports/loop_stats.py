"""What a switch process's forwarding loop went through, and its garbage collector.

Why: a frame's delay through a software switch is the time its process spends on
other frames, plus every time the process does not run its loop at all: waiting for
a CPU, a transmit ring waiting for room, or Python's cyclic garbage collector walking
the heap. The first is the kernel's to tell (``/proc/<pid>/schedstat``); the others
only the process knows, so it counts them here and reports them when asked
(``p4target group`` on SIGUSR2: ``report_line``).

``GcWatch`` times every collection by generation (``gc.callbacks``: a call at the
start and the end of each). ``apply_gc_mode`` sets how the collector runs in a switch
process once it is up:

- ``freeze`` (the default): collect once, then move every object alive to the
  permanent generation (``gc.freeze``). What a started switch process holds for good
  (programs, tables, the P4Runtime server) is then never walked again; the
  collector only sees objects made afterwards;
- ``default``: Python's own behaviour, nothing changed;
- ``off``: as ``freeze``, then the collector disabled: reference counting still frees
  everything without cycles; cycles stay until the process ends (for comparison).
"""

from __future__ import annotations

import gc
import json
import os
import signal
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

GC_MODES = ("freeze", "default", "off")
DEFAULT_GC_MODE = "freeze"
REPORT_PREFIX = "p4target group stats: "


def apply_gc_mode(mode: str) -> None:
    """Set how the collector runs from now on (see the module docstring); ValueError
    for a mode not in ``GC_MODES``."""
    if mode not in GC_MODES:
        raise ValueError(f"gc mode {mode!r}: give one of {', '.join(GC_MODES)}")
    if mode == "default":
        return
    gc.collect()
    gc.freeze()
    if mode == "off":
        gc.disable()


@dataclass
class GcWatch:
    """Collections per generation since ``install``: how many, their total and their
    longest time (seconds)."""

    count: list[int] = field(default_factory=lambda: [0, 0, 0])
    total: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    longest: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    _started: float = 0.0

    def install(self) -> None:
        if self._callback not in gc.callbacks:
            gc.callbacks.append(self._callback)

    def remove(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        gen = info.get("generation", 2)
        took = time.perf_counter() - self._started
        self.count[gen] += 1
        self.total[gen] += took
        if took > self.longest[gen]:
            self.longest[gen] = took

    def snapshot(self) -> dict[str, Any]:
        """The counts and times (ms) by generation, with the collector's state."""
        return {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(), "threshold": list(gc.get_threshold()),
                "collections": list(self.count), "total_ms": [round(t * 1e3, 3) for t in self.total],
                "longest_ms": [round(t * 1e3, 3) for t in self.longest]}


def report_line(report: dict[str, Any]) -> str:
    """One line of a report for a log: ``REPORT_PREFIX`` then compact JSON."""
    return REPORT_PREFIX + json.dumps(report, separators=(",", ":"), sort_keys=True)


def parse_report(line: str) -> dict[str, Any] | None:
    """The report in a line ``report_line`` wrote (None for any other line)."""
    at = line.find(REPORT_PREFIX)
    if at < 0:
        return None
    try:
        value = json.loads(line[at + len(REPORT_PREFIX):])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def ask_report(pid: int, log: Path, timeout: float = 2.0) -> dict[str, Any] | None:
    """Ask the ``p4target group`` process ``pid`` for its report (SIGUSR2) and read it
    from its log ``log``; None if it does not come within ``timeout`` seconds or the
    process is gone."""
    try:
        start = log.stat().st_size
        os.kill(pid, signal.SIGUSR2)
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            with open(log, "rb") as f:
                f.seek(start)
                text = f.read().decode(errors="replace")
        except OSError:
            return None
        for line in text.splitlines():
            report = parse_report(line)
            if report is not None and report.get("pid") == pid:
                return report
    return None
