"""p4target/ports/loop_stats.py: the collector's modes and timing, the report line.

The modes change the process's collector, so each runs in a child Python of its own
(the real ``apply_gc_mode``, what a ``p4target group`` process runs once it is up).
The running group process's report is checked in tests/p4runtime/test_switch_group_process.py.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from p4target.ports.loop_stats import GC_MODES, GcWatch, apply_gc_mode, parse_report, report_line

REPO = Path(__file__).resolve().parents[3]
CHILD = """
import gc, json
from p4target.ports.loop_stats import apply_gc_mode
held = [[i] for i in range(50000)]  # long-lived container objects, tracked by the collector
before = gc.get_freeze_count()
apply_gc_mode({mode!r})
print(json.dumps({{"enabled": gc.isenabled(), "frozen_more": gc.get_freeze_count() - before,
                   "threshold": list(gc.get_threshold())}}))
"""


def child_gc(mode: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", CHILD.format(mode=mode)], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    return dict(json.loads(out))


def test_freeze_moves_what_lives_to_the_permanent_generation_and_keeps_collecting() -> None:
    got = child_gc("freeze")
    assert got["enabled"] is True
    assert int(got["frozen_more"]) >= 50000  # the 50,000 lists, at least, are out of every later collection


def test_off_freezes_then_disables_and_default_changes_nothing() -> None:
    off = child_gc("off")
    assert off["enabled"] is False and int(off["frozen_more"]) >= 50000
    default = child_gc("default")
    assert default == {"enabled": True, "frozen_more": 0, "threshold": list(gc.get_threshold())}


def test_an_unknown_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(ValueError, match="freeze, default, off"):
        apply_gc_mode("sometimes")
    assert GC_MODES == ("freeze", "default", "off")


def test_gc_watch_times_each_collection_by_generation() -> None:
    watch = GcWatch()
    watch.install()
    watch.install()  # once only
    try:
        gc.collect(2)
        gc.collect(0)
        gc.collect(2)
    finally:
        watch.remove()
    assert watch.count[2] >= 2 and watch.count[0] >= 1  # others may run meanwhile, never fewer
    assert watch.total[2] > 0 and 0 < watch.longest[2] <= watch.total[2]
    gc.collect(2)  # removed: no longer counted
    assert watch.snapshot()["collections"] == watch.count
    snap = watch.snapshot()
    assert snap["enabled"] is gc.isenabled() and snap["longest_ms"][2] == round(watch.longest[2] * 1e3, 3)


def test_a_report_line_reads_back_and_other_lines_are_not_reports() -> None:
    report = {"pid": 12, "gc": {"collections": [1, 2, 3]}, "switches": {"s1": {"rx": 5}}}
    line = "2026-12-07 15:00:00 " + report_line(report)
    assert parse_report(line) == report
    assert parse_report("p4target: group of 2 switches running") is None
    assert parse_report(report_line(report)[:-3]) is None  # cut short: not JSON
