"""The traffic manager: egress queues per (port, priority), depth limits, port rates.

Queues exist so that congestion can be seen by the program (``enq_qdepth``,
``deq_qdepth``, ``deq_timedelta``) and so that a full queue drops, as on BMv2
(default depth 64 packets). A port without a rate limit never holds a packet: the
switch sends it straight to egress and skips this module, so the common path pays
nothing for it. A port with a rate sends one packet every ``1/rate`` seconds of the
switch's clock; among a port's queues the highest ``priority`` (0..7) goes first,
FIFO within one queue; among ports the packet waiting longest goes first.

A rate is a token bucket of depth ``BURST_PACKETS``: a packet's slot starts at the
end of the previous one, or at most ``BURST_PACKETS - 1`` packet times in the past.
So a switch that wakes late sends the packets it owes back to back and keeps the
long-term rate, and a port idle for a while sends at most ``BURST_PACKETS`` packets
back to back before the rate holds again.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from p4target.errors import EntryError

NUM_PRIORITIES = 8
DEFAULT_DEPTH = 64
# Depth of a rate's token bucket, in packets. Four covers a wake-up late by three
# packet times (12 ms at 250 packets/s, 3 ms at 1000), more than the scheduler delays
# of a loaded switch process, while a burst stays small beside a queue's 64 packets.
BURST_PACKETS = 4


@dataclass
class _Port:
    depth: int = DEFAULT_DEPTH
    rate_pps: float | None = None
    next_free_us: float = 0.0
    queues: list[deque] = field(default_factory=lambda: [deque() for _ in range(NUM_PRIORITIES)])

    def backlog(self) -> int:
        return sum(len(q) for q in self.queues)


class TrafficManager:
    """Queues of one switch. Items are opaque to it (the switch's packet states)."""

    def __init__(self) -> None:
        self._ports: dict[int, _Port] = {}
        self._seq = itertools.count()
        self.queued = 0
        self.default_depth = DEFAULT_DEPTH
        # ports with a rate: the switch sends every other port's packets straight to
        # egress without calling this module
        self.limited: set[int] = set()

    def _port(self, port: int) -> _Port:
        p = self._ports.get(port)
        if p is None:
            p = self._ports[port] = _Port(depth=self.default_depth)
        return p

    # ---- configuration ---------------------------------------------------------------
    def set_depth(self, port: int | None, packets: int) -> None:
        if isinstance(packets, bool) or not isinstance(packets, int) or packets < 0:
            raise EntryError("invalid", f"queue depth {packets!r} must be a packet count >= 0")
        if port is None:
            self.default_depth = packets
            for p in self._ports.values():
                p.depth = packets
            return
        self._port(port).depth = packets

    def set_rate(self, port: int, pps: float | None) -> None:
        if pps is not None and (isinstance(pps, bool) or not isinstance(pps, (int, float)) or not 0 < pps < math.inf):
            raise EntryError("invalid", f"queue rate {pps!r} must be finite packets/s > 0, or None for unlimited")
        self._port(port).rate_pps = float(pps) if pps is not None else None
        if pps is None:
            self.limited.discard(port)
        else:
            self.limited.add(port)

    def is_limited(self, port: int) -> bool:
        p = self._ports.get(port)
        return p is not None and p.rate_pps is not None

    def depth(self, port: int, priority: int | None = None) -> int:
        p = self._ports.get(port)
        if p is None:
            return 0
        if priority is None:
            return p.backlog()
        return len(p.queues[priority])

    def settings(self) -> dict[int, tuple[int, float | None]]:
        return {port: (p.depth, p.rate_pps) for port, p in self._ports.items()}

    # ---- packets --------------------------------------------------------------------
    def enqueue(self, port: int, priority: int, item: object) -> int | None:
        """Queue ``item``; returns the queue length it found, or None when full."""
        p = self._port(port)
        q = p.queues[priority]
        found = len(q)
        if found >= p.depth:
            return None
        q.append((next(self._seq), item))
        self.queued += 1
        return found

    def _head(self, p: _Port) -> tuple[int, deque] | None:
        for prio in range(NUM_PRIORITIES - 1, -1, -1):
            if p.queues[prio]:
                return prio, p.queues[prio]
        return None

    def next_departure_us(self) -> float | None:
        """The earliest time at which some queued packet may leave."""
        best = None
        for p in self._ports.values():
            if self._head(p) is not None:
                t = p.next_free_us
                if best is None or t < best:
                    best = t
        return best

    def dequeue(self, now_us: float) -> tuple[int, int, Any, int] | None:
        """The next packet allowed to leave at ``now_us``: (port, priority, item,
        queue length after it left), or None."""
        if not self.queued:
            return None
        chosen = None
        chosen_seq = None
        for port, p in self._ports.items():
            if p.next_free_us > now_us:
                continue
            head = self._head(p)
            if head is None:
                continue
            seq = head[1][0][0]
            if chosen_seq is None or seq < chosen_seq:
                chosen, chosen_seq = (port, p, head), seq
        if chosen is None:
            return None
        port, p, (prio, q) = chosen
        _, item = q.popleft()
        self.queued -= 1
        if p.rate_pps:
            gap_us = 1e6 / p.rate_pps
            start = max(p.next_free_us, now_us - (BURST_PACKETS - 1) * gap_us)
            p.next_free_us = start + gap_us
        else:
            p.next_free_us = max(p.next_free_us, now_us)
        return port, prio, item, len(q)

    def clear(self) -> list[object]:
        """Empty every queue; returns what was in them (for drop accounting)."""
        out: list[object] = []
        for p in self._ports.values():
            for q in p.queues:
                out.extend(item for _, item in q)
                q.clear()
        self.queued = 0
        return out
