"""The traffic manager's queues on its own: depth limit, priorities, port rate."""

from __future__ import annotations

import pytest

from p4target.errors import EntryError
from p4target.runtime.traffic import TrafficManager


def test_depth_limit_priority_order_and_rate() -> None:
    tm = TrafficManager()
    tm.set_rate(1, 1000)  # one packet per millisecond
    tm.set_depth(1, 3)
    assert [tm.enqueue(1, 0, f"lo{i}") for i in range(4)] == [0, 1, 2, None]
    assert tm.enqueue(1, 7, "hi") == 0
    first = tm.dequeue(0)
    assert first[:3] == (1, 7, "hi")
    assert tm.dequeue(0) is None  # the port is busy for 1 ms
    assert tm.next_departure_us() == 1000
    assert tm.dequeue(1000)[2:] == ("lo0", 2)
    assert tm.dequeue(2000)[2:] == ("lo1", 1)
    assert tm.depth(1) == 1


def test_ports_interleave_by_arrival() -> None:
    tm = TrafficManager()
    for p in (1, 2):
        tm.set_rate(p, 1000)
    tm.enqueue(2, 0, "a")
    tm.enqueue(1, 0, "b")
    assert tm.dequeue(0)[2] == "a"
    assert tm.dequeue(0)[2] == "b"


def test_a_rate_that_is_not_finite_is_refused() -> None:
    tm = TrafficManager()
    for bad in (float("nan"), float("inf"), 0, -1):
        with pytest.raises(EntryError, match="must be finite packets/s > 0"):
            tm.set_rate(1, bad)
    assert not tm.is_limited(1)


def _drain(tm: TrafficManager, now_us: float) -> list:
    out = []
    while (d := tm.dequeue(now_us)) is not None:
        out.append(d)
    return out


def test_a_late_wake_up_is_caught_up_so_the_long_term_rate_holds() -> None:
    # 250 packets/s is one packet every 4 ms; the switch wakes only every 10 ms, for
    # 10 s, with the queue never empty: 250 * 10 = 2500 packets must leave, give or
    # take the bucket's 4 packets (one packet per wake-up would be 1001)
    tm = TrafficManager()
    tm.set_rate(1, 250)
    tm.set_depth(1, 10)
    sent = 0
    for wake in range(1001):
        now = wake * 10_000.0
        while tm.depth(1) < 10:
            tm.enqueue(1, 0, "p")
        sent += len(_drain(tm, now))
    assert abs(sent - 2500) <= 4


def test_an_idle_port_sends_at_most_four_back_to_back_then_the_rate() -> None:
    tm = TrafficManager()
    tm.set_rate(1, 1000)  # one packet per millisecond
    tm.set_depth(1, 20)
    tm.enqueue(1, 0, "first")
    assert len(_drain(tm, 0)) == 1
    for idle_until in (1_000_000.0, 11_000_000.0):  # idle 1 s, then 10 s more
        for i in range(10):
            tm.enqueue(1, 0, i)
        burst = _drain(tm, idle_until)
        assert [d[2] for d in burst] == [0, 1, 2, 3]  # the bucket holds 4, no more
        assert [d[3] for d in burst] == [9, 8, 7, 6]  # queue length after each
        times = []
        while tm.queued:
            t = tm.next_departure_us()
            assert t is not None
            times.append(t)
            assert len(_drain(tm, t)) == 1
        assert times == [idle_until + 1000.0 * k for k in range(1, 7)]


def test_a_catch_up_burst_keeps_priority_then_fifo_order() -> None:
    tm = TrafficManager()
    tm.set_rate(1, 1000)
    for i in range(3):
        tm.enqueue(1, 0, f"lo{i}")
    for i in range(3):
        tm.enqueue(1, 5, f"hi{i}")
    out = _drain(tm, 50_000.0)  # woken 50 ms late: 4 packets owed by the bucket
    assert [(d[1], d[2]) for d in out] == [(5, "hi0"), (5, "hi1"), (5, "hi2"), (0, "lo0")]
    assert tm.depth(1, 0) == 2
