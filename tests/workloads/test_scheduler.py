"""The scheduler starts each flow when its waits are met or its time has come, and an
iteration when the one before has ended: traced by hand on small schedules."""

from __future__ import annotations

import pytest

from workloads.collectives import ring_allreduce
from workloads.htsim import parse
from workloads.scheduler import Scheduler


def ids(flows: list) -> list[int]:  # type: ignore[type-arg]
    return sorted(f.id for f in flows)


def test_a_ring_of_three_step_by_step() -> None:
    s = Scheduler(ring_allreduce(3, 9), iterations=2)  # ids: step * 3 + rank + 1
    s.begin(10.0)
    assert ids(s.due(10.0)) == [1, 2, 3]
    assert s.due(10.0) == []
    s.arrived(1, 10.5)  # 0 -> 1 arrived: rank 1's step 1 needs its own step 0 (id 2) too
    assert s.due(10.5) == []
    s.arrived(2, 10.6)  # now rank 1 (id 5) may go; rank 2 (id 6) waits for its own (id 3)
    assert ids(s.due(10.6)) == [5]
    s.arrived(3, 10.7)
    assert ids(s.due(10.7)) == [4, 6]
    # finish the iteration in schedule order
    order = [5, 4, 6, 7, 8, 9, 10, 11, 12]
    started = {4, 5, 6}
    for i, f in enumerate(order):
        started |= {g.id for g in s.due(11.0 + i)}
        assert f in started
        ended = s.arrived(f, 11.0 + i)
        assert ended == (f == 12)
    assert s.started_at == [10.0, 19.0] and s.ended_at == [19.0] and not s.done
    assert ids(s.due(19.0)) == [1, 2, 3]  # the second iteration began where the first ended


def test_timed_starts_and_a_barrier() -> None:
    m = parse("Nodes 3\n0->1 id 1 start 0 size 5 send_done_trigger 7\n1->2 id 2 start 500 size 5 "
              "send_done_trigger 7\n2->0 id 3 trigger 7 size 5\ntrigger id 7 barrier count 2\n")
    s = Scheduler(m, iterations=1)
    s.begin(100.0)
    assert ids(s.due(100.0)) == [1]
    assert s.next_start() == pytest.approx(100.0005)  # 500 us after the iteration's start
    assert s.due(100.0004) == []
    assert ids(s.due(100.0005)) == [2]
    s.arrived(2, 100.1)
    assert s.due(100.1) == []  # a barrier of 2: one arrival is not enough
    s.arrived(1, 100.2)
    assert ids(s.due(100.2)) == [3]
    assert s.arrived(3, 100.3) and s.done and s.ended_at == [100.3]


def test_an_iteration_ends_at_its_latest_arrival_told_in_any_order() -> None:
    s = Scheduler(ring_allreduce(2, 4), iterations=2)
    s.begin(0.0)
    s.due(0.0)
    s.arrived(1, 0.5)
    s.arrived(2, 0.4)
    s.due(0.5)
    s.arrived(4, 0.9)
    assert s.arrived(3, 0.8)  # told last, arrived before flow 4
    assert s.ended_at == [0.9] and s.started_at == [0.0, 0.9]


def test_an_arrival_out_of_turn_is_refused() -> None:
    s = Scheduler(ring_allreduce(2, 4), iterations=1)
    s.begin(0.0)
    with pytest.raises(ValueError):
        s.arrived(3, 0.1)  # not started yet
    with pytest.raises(ValueError):
        Scheduler(ring_allreduce(2, 4), iterations=0)
