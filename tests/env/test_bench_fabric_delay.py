"""The pure parts of bench/fabric_delay.py: percentiles, /proc parsing, residences.

Why: the benchmark's figures are only as right as these; the expected values are
worked out by hand here (the benchmark itself needs root and a Mininet fabric and
is never timed in a test).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from bench.fabric_delay import SchedStat, parse_schedstat, parse_stat_cpu_ticks, percentile, residences


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
