"""The pure parts of bench/fabric_delay.py and bench/_proc_stats.py: percentiles, /proc parsing, residences.

Why: the benchmark's figures are only as right as these; the expected values are
worked out by hand here (the benchmark itself needs root and a Mininet fabric and
is never timed in a test).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from bench._proc_stats import SchedStat, parse_involuntary, parse_schedstat, parse_stat_cpu_ticks
from bench.fabric_delay import Variant, parse_variant, percentile, report_diff, residences


def test_nearest_rank_percentiles() -> None:
    values = list(range(1000, 0, -1))  # 1..1000, in any order
    assert [percentile(values, q) for q in (50, 99, 99.9, 100)] == [500, 990, 999, 1000]
    assert percentile([7, 3, 5], 50) == 5 and percentile([7, 3, 5], 99.9) == 7 and percentile([7, 3, 5], 1) == 3
    assert percentile([42], 99.9) == 42
    assert math.isnan(percentile([], 50))


def test_schedstat_is_cpu_wait_and_timeslices() -> None:
    assert parse_schedstat("123456 7890 12\n") == SchedStat(123456, 7890, 12)
    assert parse_schedstat("5 6 7\n") - SchedStat(1, 2, 3) == SchedStat(4, 4, 4)
    own = parse_schedstat(Path(f"/proc/{os.getpid()}/schedstat").read_text())
    assert own.cpu_ns > 0 and own.slices > 0


def test_stat_cpu_is_utime_plus_stime_after_a_name_with_spaces_and_parens() -> None:
    # fields: pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    # cmajflt utime stime ...: utime (14) 250, stime (15) 75
    line = "1234 (a b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 12345\n"
    assert parse_stat_cpu_ticks(line) == 325
    assert parse_stat_cpu_ticks(Path(f"/proc/{os.getpid()}/stat").read_text()) >= 0


def test_residences_split_the_delay_between_host_and_switches() -> None:
    # sent at 1,000 ns; at the NIC's port 1,300, the leaf's 1,800, the spine's 2,000,
    # the other leaf's 2,600, the far NIC's 2,700; at the receiving host 3,100
    seen = [(2000, "p0-spine0"), (1300, "nic1"), (2700, "nic3"), (1800, "p0-leaf0"), (2600, "p0-leaf1")]
    assert residences(1000, seen, 3100) == [("host", 300), ("nic1", 500), ("p0-leaf0", 200), ("p0-spine0", 600),
                                            ("p0-leaf1", 100), ("nic3", 400)]
    assert sum(ns for _, ns in residences(1000, seen, 3100)) == 3100 - 1000
    assert residences(1000, [], 3100) == []


def test_involuntary_switches_are_read_from_a_status_file() -> None:
    status = "Name:\tp4target\nvoluntary_ctxt_switches:\t120\nnonvoluntary_ctxt_switches:\t37\n"
    assert parse_involuntary(status) == 37
    assert parse_involuntary("Name:\tx\n") == 0
    assert parse_involuntary(Path(f"/proc/{os.getpid()}/status").read_text()) >= 0


def test_variants_parse_settings_joined_by_plus_and_refuse_others() -> None:
    assert parse_variant("base") == Variant("base")
    v = parse_variant("nice=-10+unpinned")
    assert (v.nice, v.unpinned, v.rr, v.gc, v.spp, v.network) == (-10, True, 0, None, "cpu", (None, "cpu"))
    assert parse_variant("rr=5").rr == 5 and parse_variant("slice=300+nice=-5").slice_us == 300
    assert parse_variant("gc=default+spp=1").network == ("default", "1")
    for bad in ("nice", "nice=x", "gc=sometimes", "fast", "spp=", "slice=-1"):
        with pytest.raises(ValueError, match="is not base"):
            parse_variant(bad)


def test_a_report_diff_counts_what_happened_between_two_reports() -> None:
    def report(passes: int, sleeps: int, rx: tuple[int, int], batches: tuple[int, int], waits: int, gcs: list[int],
               spent: list[float]) -> dict[str, object]:
        sws = {f"s{k}": {"rx": rx[k], "batches": batches[k], "largest_batch": 9, "flush_waits": waits,
                         "flush_wait_ms": 1.5 * waits, "rx_dropped": 0} for k in range(2)}
        return {"pid": 7, "passes": passes, "sleeps": sleeps, "switches": sws,
                "gc": {"enabled": True, "collections": gcs, "total_ms": spent, "longest_ms": [0.1, 0.2, 3.0]}}

    before = report(100, 40, (10, 20), (5, 5), 0, [3, 1, 0], [0.5, 0.25, 0.0])
    after = report(1100, 90, (410, 620), (105, 205), 2, [13, 2, 1], [1.5, 0.5, 3.0])
    line = report_diff(before, after)
    # frames 1,000 (400 + 600) in 300 batches (100 + 200): 3.3 a batch; 2 waits per switch, 3 ms each switch
    assert line.startswith("pid 7: 1,000 passes (50 slept), 1,000 frames in 300 ring batches (mean 3.3, largest so far 9)")
    assert "4 transmit flushes waited (6.0 ms)" in line and "0 dropped on full rings" in line
    assert "collections by generation [10, 1, 1] ([1.0, 0.2, 3.0] ms)" in line
