"""What the sender keeps to resend: the packets in flight with their timers, the
packets to resend, and the retransmission timeout (RFC 6298 estimator, Karn's rule).

Why apart from the sender: the sender decides what a loss means (which EV is to
blame, whether the window shrinks); this module only remembers what was sent when,
finds what timed out and hands back what is to go again, in order: trimmed packets
first (their queue is still near the trim threshold: a halved window must not hold
them back), then the other losses, oldest first.
"""

from __future__ import annotations

from collections import deque


class RttEstimator:
    """Smoothed RTT, its variation and the retransmission timeout: RFC 6298's
    ``srtt + 4 rttvar``, at least twice the RTT, within ``[rto_min, rto_max]``; the
    initial RTO within the same bounds."""

    def __init__(self, *, rto_initial: float, rto_min: float, rto_max: float) -> None:
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rto = min(rto_max, max(rto_min, rto_initial))
        self._min = rto_min
        self._max = rto_max

    def sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        # At least twice the RTT: the congestion window may double in one round trip
        # (endpoints/congestion.py), and when all it adds waits in one queue the next
        # packets' RTT is up to twice this one; an RTO below that fires for packets
        # that are only queued (RFC 6298's srtt + 4 rttvar lags a steady rise).
        self.rto = min(self._max, max(self._min, self.srtt + 4 * self.rttvar, 2 * max(self.srtt, rtt)))

    def back_off(self) -> None:
        """A timeout fired: double the RTO until an RTT sample says otherwise."""
        self.rto = min(self._max, 2 * self.rto)


class InFlight:
    """Packets (by index) in flight and to resend.

    ``inflight[idx] = (sent at, ev, transmission)`` for every packet whose last
    transmission is unanswered; ``timers`` the same, in the order sent (a packet sent
    again has a newer timer; the older one is skipped when it comes up)."""

    def __init__(self) -> None:
        self.inflight: dict[int, tuple[float, int, int]] = {}
        self.timers: deque[tuple[float, int, int]] = deque()  # (sent at, idx, transmission), sent order
        self.lost: deque[int] = deque()  # to retransmit, oldest first
        self.trimmed: deque[int] = deque()  # to retransmit at once (trim NACKs)
        self._queued: set[int] = set()  # in lost or trimmed
        self._tx_count: dict[int, int] = {}  # idx -> transmissions so far, while waiting to be resent

    def sent(self, idx: int, ev: int, now: float, resend: bool) -> int:
        """Packet ``idx`` left on ``ev``; its transmission number."""
        n = self._tx_count.pop(idx, 0) + 1 if resend else 1
        self.inflight[idx] = (now, ev, n)
        self.timers.append((now, idx, n))
        return n

    def answered(self, idx: int) -> tuple[float, int, int] | None:
        """Packet ``idx`` is acknowledged: its record, if it was in flight."""
        self._tx_count.pop(idx, None)
        return self.inflight.pop(idx, None)

    def expired(self, now: float, rto: float) -> tuple[int, int] | None:
        """(idx, ev) of the oldest packet whose last transmission is older than ``rto``,
        if any. One per timeout, as TCP does (RFC 6298 5.4): the RTO then doubles, and
        the packets sent after it are judged against the doubled RTO. Why not all at
        once: when the RTT jumps (a slow target, a queue) every packet of the window
        passes the old RTO together, and resending them all would double the load
        that delayed them."""
        timers = self.timers
        while timers and timers[0][0] + rto <= now:
            _, idx, n = timers.popleft()
            rec = self.inflight.get(idx)
            if rec is None or rec[2] != n:
                continue  # acked, or declared lost and sent again since
            return idx, rec[1]
        return None

    def lose(self, idx: int, trimmed: bool) -> tuple[float, int, int]:
        """Packet ``idx`` (in flight) is lost: queued to be resent; its record."""
        rec = self.inflight.pop(idx)
        self._tx_count[idx] = rec[2]
        if idx not in self._queued:
            (self.trimmed if trimmed else self.lost).append(idx)
            self._queued.add(idx)
        return rec

    def has_resend(self) -> bool:
        return bool(self.trimmed or self.lost)

    def next_resend(self) -> int | None:
        """The next packet to resend (trimmed first), None if there is none; it may
        have been acknowledged since it was queued (the caller checks)."""
        queue = self.trimmed or self.lost
        if not queue:
            return None
        idx = queue.popleft()
        self._queued.discard(idx)
        return idx
