"""The collectives' schedules against tables written out by hand (N = 2, 3, 4) and
against what the collective must achieve, executed on data (N = 2..8): after the ring
all-reduce every rank holds the sum of every rank's message, after the all-gather every
rank holds every rank's chunk, after the all-to-all rank d holds chunk d of every rank."""

from __future__ import annotations

import pytest

from workloads.collectives import alltoall, chunk, collective, ring_allgather, ring_allreduce, ring_order
from workloads.schedule import Schedule, ScheduleError


def table(s: Schedule) -> list[list[tuple[int, int, int]]]:
    """Per step: (src, dst, bytes) sorted by source."""
    return [sorted((f.src, f.dst, f.size) for f in s.step_flows(k)) for k in range(s.steps)]


def waits(s: Schedule) -> dict[tuple[int, int], set[tuple[int, int]]]:
    """(step, src) -> the (step, src) of the flows it waits for."""
    key = {f.id: (f.step, f.src) for f in s.flows}
    return {(f.step, f.src): {key[d] for d in f.deps} for f in s.flows}


def test_chunks_are_cut_as_nccl_cuts_them() -> None:
    assert [chunk(10, 3, c) for c in range(3)] == [4, 3, 3]
    assert [chunk(8, 4, c) for c in range(4)] == [2, 2, 2, 2]
    assert [chunk(11, 4, c) for c in range(4)] == [3, 3, 3, 2]


def test_allreduce_of_two_by_hand() -> None:
    s = ring_allreduce(2, 10)  # chunks 5, 5
    assert s.steps == 2
    assert table(s) == [[(0, 1, 5), (1, 0, 5)], [(0, 1, 5), (1, 0, 5)]]
    assert waits(s) == {(0, 0): set(), (0, 1): set(), (1, 0): {(0, 1), (0, 0)}, (1, 1): {(0, 0), (0, 1)}}


def test_allreduce_of_three_by_hand() -> None:
    s = ring_allreduce(3, 10)  # chunks 4, 3, 3
    # reduce-scatter: step 0 rank r sends chunk r; step 1 chunk r-1. all-gather: chunk r+1, then chunk r.
    assert table(s) == [
        [(0, 1, 4), (1, 2, 3), (2, 0, 3)],   # c0 c1 c2
        [(0, 1, 3), (1, 2, 4), (2, 0, 3)],   # c2 c0 c1
        [(0, 1, 3), (1, 2, 3), (2, 0, 4)],   # c1 c2 c0
        [(0, 1, 4), (1, 2, 3), (2, 0, 3)],   # c0 c1 c2
    ]
    assert waits(s)[(2, 1)] == {(1, 0), (1, 1)}  # rank 1's third send: its input from 0, its own second send
    assert waits(s)[(1, 0)] == {(0, 2), (0, 0)}


def test_allreduce_of_four_by_hand() -> None:
    s = ring_allreduce(4, 4000)
    assert s.steps == 6
    for step in table(s):
        assert step == [(0, 1, 1000), (1, 2, 1000), (2, 3, 1000), (3, 0, 1000)]
    assert len(s.flows) == 24 and s.total_bytes() == 24_000


def test_allgather_and_alltoall_of_three_by_hand() -> None:
    g = ring_allgather(3, 9)
    assert table(g) == [[(0, 1, 3), (1, 2, 3), (2, 0, 3)]] * 2
    assert waits(g)[(1, 2)] == {(0, 1), (0, 2)}
    a = alltoall(3, 10)  # chunk d to rank d: 4, 3, 3
    assert table(a) == [[(0, 1, 3), (0, 2, 3), (1, 0, 4), (1, 2, 3), (2, 0, 4), (2, 1, 3)]]
    assert all(f.start_us == 0 and not f.deps for f in a.flows)


def _chunk_sent(s: Schedule, n: int, f_step: int, src: int, name: str) -> int:
    """The chunk a ring flow carries, from first principles (not from the schedule):
    reduce-scatter sends the chunk received last step (its own r at step 0), all-gather
    first the chunk the rank finished reducing, (r + 1), then what it received."""
    if name == "allgather":
        return (src - f_step) % n
    if f_step < n - 1:
        return (src - f_step) % n
    return (src + 1 - (f_step - (n - 1))) % n


@pytest.mark.parametrize("n", range(2, 9))
def test_ring_allreduce_sums_every_chunk_everywhere(n: int) -> None:
    size = 1000 * n + 3
    s = ring_allreduce(n, size)
    assert s.steps == 2 * (n - 1)
    held = [[{r} for _c in range(n)] for r in range(n)]  # held[rank][chunk]: whose contributions it has
    for step in range(s.steps):
        flows = s.step_flows(step)
        assert sorted((f.src, f.dst) for f in flows) == [(r, (r + 1) % n) for r in range(n)]
        sent = [(f.dst, _chunk_sent(s, n, step, f.src, "allreduce"), set(held[f.src][_chunk_sent(s, n, step, f.src,
                 "allreduce")]), f.size) for f in flows]
        for dst, c, contrib, nbytes in sent:
            assert nbytes == size // n + (c < size % n)
            if step < n - 1:
                held[dst][c] |= contrib  # reduce
            else:
                held[dst][c] = contrib  # copy
    assert all(held[r][c] == set(range(n)) for r in range(n) for c in range(n))
    for f in s.flows:  # a step waits for its input and its own previous send, nothing else
        expect = set() if f.step == 0 else {(f.step - 1, (f.src - 1) % n), (f.step - 1, f.src)}
        assert waits(s)[(f.step, f.src)] == expect


@pytest.mark.parametrize("n", range(2, 9))
def test_ring_allgather_gives_everyone_every_chunk(n: int) -> None:
    s = ring_allgather(n, 64 * n)
    held = [{r} for r in range(n)]
    for step in range(n - 1):
        moved = [(f.dst, _chunk_sent(s, n, step, f.src, "allgather")) for f in s.step_flows(step)]
        for f in s.step_flows(step):
            assert _chunk_sent(s, n, step, f.src, "allgather") in held[f.src]  # it has what it sends
        for dst, c in moved:
            held[dst].add(c)
    assert held == [set(range(n))] * n


@pytest.mark.parametrize("n", range(2, 9))
def test_alltoall_sends_chunk_d_to_rank_d(n: int) -> None:
    size = 100 * n + 1
    s = alltoall(n, size)
    assert s.steps == 1 and len(s.flows) == n * (n - 1)
    pairs = {(f.src, f.dst): f.size for f in s.flows}
    assert pairs == {(r, d): size // n + (d < size % n) for r in range(n) for d in range(n) if d != r}


def test_bad_collectives_are_refused() -> None:
    with pytest.raises(ScheduleError, match="2 or more hosts"):
        ring_allreduce(1, 100)
    with pytest.raises(ScheduleError, match="one byte per host"):
        alltoall(4, 3)
    with pytest.raises(ScheduleError, match="one of allreduce"):
        collective("broadcast", 4, 100)


def test_ring_order_crosses_leaves() -> None:
    assert ring_order([["h1", "h2"], ["h3", "h4"]]) == ["h1", "h3", "h2", "h4"]
    assert ring_order([["h1", "h2", "h3"], ["h4"]]) == ["h1", "h4", "h2", "h3"]
