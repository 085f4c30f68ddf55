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
