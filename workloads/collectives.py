"""The schedules of the collectives: who sends which bytes to whom in which step.

Ranks ``0..n-1`` stand in a ring (rank r sends to r+1 mod n); the runner maps ranks to
hosts (``ring_order``). A message of ``size`` bytes is cut into n chunks as NCCL cuts
it: chunk c has ``size // n`` bytes, one more for the first ``size % n`` chunks.

- **ring all-reduce**: reduce-scatter (n-1 steps: in step s rank r sends chunk
  (r - s) mod n and adds the chunk it receives to its own), then all-gather (n-1
  steps: in step n-1+t rank r sends chunk (r + 1 - t) mod n, the reduced chunks going
  round). 2(n-1) steps of one chunk per rank.
- **all-gather** (ring): n-1 steps, in step t rank r sends chunk (r - t) mod n.
- **all-to-all**: one step, every rank sends chunk d of its message to rank d.

In the ring collectives a rank's send of step s waits for the chunk it received in
step s-1 (its input) and for its own send of step s-1 (one send queue per neighbour),
as NCCL's ring proceeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workloads.schedule import Flow, Schedule, ScheduleError

COLLECTIVES = ("allreduce", "alltoall", "allgather")


def chunk(size: int, n: int, c: int) -> int:
    """Bytes of chunk ``c`` of a ``size``-byte message cut into ``n``."""
    return size // n + (1 if c < size % n else 0)


def _check(n: int, size: int) -> None:
    if n < 2:
        raise ScheduleError(f"a collective needs 2 or more hosts, not {n}")
    if size < n:
        raise ScheduleError(f"message size {size}: give at least one byte per host ({n})")


def _ring(name: str, n: int, size: int, steps: int, chunk_of: Callable[[int, int], int]) -> Schedule:
    """``steps`` ring steps; ``chunk_of(step, rank)`` is the chunk rank sends then."""
    ids = {(s, r): s * n + r + 1 for s in range(steps) for r in range(n)}
    flows = []
    for s in range(steps):
        for r in range(n):
            deps = () if s == 0 else (ids[(s - 1, (r - 1) % n)], ids[(s - 1, r)])
            flows.append(Flow(ids[(s, r)], r, (r + 1) % n, chunk(size, n, chunk_of(s, r)),
                              start_us=0.0 if s == 0 else None, deps=deps, step=s))
    return Schedule(name, n, tuple(flows), steps)


def ring_allreduce(n: int, size: int) -> Schedule:
    _check(n, size)

    def chunk_of(s: int, r: int) -> int:
        return (r - s) % n if s < n - 1 else (r + 1 - (s - (n - 1))) % n

    return _ring("allreduce", n, size, 2 * (n - 1), chunk_of)


def ring_allgather(n: int, size: int) -> Schedule:
    _check(n, size)
    return _ring("allgather", n, size, n - 1, lambda s, r: (r - s) % n)


def alltoall(n: int, size: int) -> Schedule:
    _check(n, size)
    flows = [Flow(r * n + d + 1, r, d, chunk(size, n, d), start_us=0.0) for r in range(n) for d in range(n) if d != r]
    return Schedule("alltoall", n, tuple(flows), 1)


def collective(name: str, n: int, size: int) -> Schedule:
    make = {"allreduce": ring_allreduce, "alltoall": alltoall, "allgather": ring_allgather}.get(name)
    if make is None:
        raise ScheduleError(f"collective {name!r}: one of {', '.join(COLLECTIVES)}")
    return make(n, size)


def ring_order(hosts_by_leaf: Sequence[Sequence[str]]) -> list[str]:
    """Hosts in a ring that crosses the spines at every hop it can: one host of each
    leaf in turn (h1 h3 h2 h4 for two leaves of two hosts), so that a step's flows load
    the fabric, not a leaf's own ports."""
    out: list[str] = []
    depth = max((len(h) for h in hosts_by_leaf), default=0)
    for i in range(depth):
        out += [hosts[i] for hosts in hosts_by_leaf if i < len(hosts)]
    return out
