"""When each flow of a job starts: the schedule's waits and start times, iteration
after iteration (pure: the runner hands it the times).

An iteration starts when the one before it has ended (the job waits for its slowest
flow, as a training step waits for its collective); a flow starts at its start time
after its iteration's start, or once ``need`` of the flows it waits for have arrived.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workloads.schedule import Flow, Schedule


@dataclass
class Scheduler:
    schedule: Schedule
    iterations: int
    iteration: int = 0
    started_at: list[float] = field(default_factory=list)  # each iteration's start
    ended_at: list[float] = field(default_factory=list)
    _count: dict[int, int] = field(default_factory=dict)
    _started: set[int] = field(default_factory=set)
    _arrived: set[int] = field(default_factory=set)
    _ready: list[Flow] = field(default_factory=list)
    _waiters: dict[int, list[Flow]] = field(default_factory=dict)
    _last: float = float("-inf")  # the latest arrival of this iteration (events come in any order)

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ValueError(f"iterations {self.iterations}: give 1 or more")
        for f in self.schedule.flows:
            for d in f.deps:
                self._waiters.setdefault(d, []).append(f)

    @property
    def done(self) -> bool:
        return len(self.ended_at) == self.iterations

    def begin(self, now: float) -> None:
        """Start the next iteration at ``now``."""
        self.started_at.append(now)
        self._count.clear()
        self._started.clear()
        self._arrived.clear()
        self._last = now
        self._ready = sorted((f for f in self.schedule.flows if f.start_us is not None),
                             key=lambda f: (f.start_us or 0.0, f.id))

    def next_start(self) -> float | None:
        """When the next flow of this iteration is due (None: none is, until an arrival)."""
        if not self._ready or self.done:
            return None
        return self.started_at[-1] + min((f.start_us or 0.0) for f in self._ready) / 1e6

    def due(self, now: float) -> list[Flow]:
        """The flows to start at ``now`` (each once)."""
        if self.done or not self.started_at:
            return []
        t0 = self.started_at[-1]
        out = [f for f in self._ready if f.start_us is None or t0 + f.start_us / 1e6 <= now]
        self._ready = [f for f in self._ready if f not in out]
        self._started.update(f.id for f in out)
        return out

    def arrived(self, flow: int, now: float) -> bool:
        """Flow ``flow`` of the current iteration has arrived at ``now``; True when that
        ended the iteration, at its latest arrival (arrivals may be told out of their
        order); the next one, if any, begins then."""
        if flow in self._arrived or flow not in self._started:
            raise ValueError(f"flow {flow} arrived twice or before it started")
        self._arrived.add(flow)
        self._last = max(self._last, now)
        for g in self._waiters.get(flow, ()):
            self._count[g.id] = self._count.get(g.id, 0) + 1
            if self._count[g.id] == g.needed:
                self._ready.append(g)
        if len(self._arrived) < len(self.schedule.flows):
            return False
        self.ended_at.append(self._last)
        self.iteration += 1
        if not self.done:
            self.begin(self._last)
        return True
