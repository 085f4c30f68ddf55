"""A job's flows as plain values: who sends how many bytes to whom, and when.

Why one model: a collective (``collectives.py``) and an htsim connection matrix
(``htsim.py``) are both a list of flows, each starting at a time or once some other
flows have arrived; the runner (``runner.py``) and the figures (``figures.py``) take
either the same way. Hosts are ranks ``0..nodes-1`` here; the runner maps them to the
fabric's hosts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


class ScheduleError(ValueError):
    """A schedule that cannot run: one line naming the flow and the fix."""


@dataclass(frozen=True)
class Flow:
    """One transfer of ``size`` bytes from rank ``src`` to rank ``dst``.

    It starts ``start_us`` microseconds after its iteration starts, or, when that is
    None, once ``need`` of the flows ``deps`` (their ids) have arrived (all of them
    when ``need`` is None). ``step`` is its collective step (0 for a matrix)."""

    id: int
    src: int
    dst: int
    size: int
    start_us: float | None = None
    deps: tuple[int, ...] = ()
    need: int | None = None
    step: int = 0

    @property
    def needed(self) -> int:
        return len(self.deps) if self.need is None else self.need


@dataclass(frozen=True)
class Schedule:
    """One iteration of a job: ``flows`` over ``nodes`` ranks, ``steps`` steps."""

    name: str
    nodes: int
    flows: tuple[Flow, ...]
    steps: int = 1
    by_id: dict[int, Flow] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_id", {f.id: f for f in self.flows})
        check(self)

    def step_flows(self, step: int) -> list[Flow]:
        return [f for f in self.flows if f.step == step]

    def total_bytes(self) -> int:
        return sum(f.size for f in self.flows)


def _flow_problem(f: Flow, nodes: int, ids: set[int]) -> str | None:
    if f.id < 1:
        return "ids are 1 or more"
    if not (0 <= f.src < nodes and 0 <= f.dst < nodes):
        return f"its hosts {f.src}->{f.dst} are not among the {nodes} nodes (0..{nodes - 1})"
    if f.src == f.dst:
        return f"it goes from node {f.src} to itself; give two different nodes"
    if f.size < 1:
        return f"size {f.size}: give 1 byte or more"
    if (f.start_us is None) == (not f.deps):
        return "give it a start time or flows it waits for (one of them)"
    if f.start_us is not None and not f.start_us >= 0:
        return f"start {f.start_us}: give 0 or more microseconds"
    missing = [d for d in f.deps if d not in ids]
    if missing:
        return f"it waits for flow {missing[0]}, which is not in the schedule"
    if f.deps and not 1 <= f.needed <= len(f.deps):
        return f"it waits for {f.needed} of {len(f.deps)} flows"
    return None


def check(s: Schedule) -> None:
    """Raise ``ScheduleError`` unless every flow is well formed, ids are unique and the
    waits form no cycle (every flow can start)."""
    ids: set[int] = set()
    for f in s.flows:
        if f.id in ids:
            raise ScheduleError(f"{s.name}: flow id {f.id} is used twice; give each flow its own id")
        ids.add(f.id)
    for f in s.flows:
        problem = _flow_problem(f, s.nodes, ids)
        if problem:
            raise ScheduleError(f"{s.name}: flow {f.id}: {problem}")
    order = start_order(s.flows)
    if len(order) < len(s.flows):
        stuck = sorted(set(ids) - {f.id for f in order})
        raise ScheduleError(f"{s.name}: flows {stuck[:5]} wait for each other (a cycle) and never start; "
                            "break the cycle")


def start_order(flows: Sequence[Flow]) -> list[Flow]:
    """The flows in an order where each comes after enough of those it waits for
    (those that can never start are left out)."""
    done: set[int] = set()
    count: dict[int, int] = {}
    waiting_on: dict[int, list[Flow]] = {}
    ready = [f for f in flows if not f.deps]
    for f in flows:
        for d in f.deps:
            waiting_on.setdefault(d, []).append(f)
    out: list[Flow] = []
    while ready:
        f = ready.pop()
        out.append(f)
        done.add(f.id)
        for g in waiting_on.get(f.id, ()):
            count[g.id] = count.get(g.id, 0) + 1
            if count[g.id] == g.needed:
                ready.append(g)
    return out


def renumbered(flows: Iterable[Flow], first: int = 1) -> list[Flow]:
    """``flows`` with ids from ``first`` on in their order, waits following."""
    flows = list(flows)
    new = {f.id: first + i for i, f in enumerate(flows)}
    return [Flow(new[f.id], f.src, f.dst, f.size, f.start_us, tuple(new[d] for d in f.deps), f.need, f.step)
            for f in flows]
