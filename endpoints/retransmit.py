"""What the sender keeps to resend: the packets in flight with their timer, the
packets to resend, and the retransmission timeout (RFC 6298 estimator and timer,
Karn's rule).

Why apart from the sender: the sender decides what a loss means (which EV is to
blame, whether the window shrinks); this module only remembers what was sent when,
finds what timed out and hands back what is to go again, in order: trimmed packets
first (their queue is still near the trim threshold: a halved window must not hold
them back), then the other losses, oldest first.
"""

from __future__ import annotations

from collections import deque

# RFC 6298's G: the clock's granularity, the least 4 rttvar may add. The sender's
# clock is time.monotonic (nanoseconds); its I/O loop wakes within about a millisecond.
CLOCK_GRANULARITY = 0.001


class RttEstimator:
    """Smoothed RTT, its variation and the retransmission timeout, as RFC 6298 2.2-2.5:
    ``srtt + max(G, 4 rttvar)``, plus ``ack_delay`` (the longest the receiver may hold
    an ACK, as QUIC's PTO adds it: the packet the timer waits for may be one the
    receiver acknowledges late), within ``[rto_min, rto_max]``; the initial RTO within
    the same bounds. Its samples: every packet sent once that an ACK newly acknowledges,
    cumulatively or by SACK (Karn: none from a resent packet). With a sample per packet
    rttvar decays within a round trip when the RTT is steady, and the RTO is then
    ``srtt + G + ack_delay`` or the floor: what keeps a late packet from a needless
    resend is the timer's restart on every acknowledgement (``InFlight``), not rttvar."""

    def __init__(self, *, rto_initial: float, rto_min: float, rto_max: float, ack_delay: float = 0.0,
                 granularity: float = CLOCK_GRANULARITY) -> None:
        self.srtt: float | None = None
        self.rttvar = 0.0
        self._min = rto_min
        self._max = rto_max
        self._extra = ack_delay
        self._g = granularity
        self.rto = self._bounded(rto_initial)
        self.backoffs = 0  # timeouts since the last sample

    def _bounded(self, rto: float) -> float:
        return min(self._max, max(self._min, rto))

    def sample(self, rtt: float) -> None:
        """One RTT measurement: RFC 6298 2.2 (the first) or 2.3 (the rttvar update uses
        the srtt before this sample), then 2.4-2.5. It also ends any backoff: the RTO
        is the estimator's again (Karn: a sample from a packet sent once)."""
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.backoffs = 0
        self.rto = self._bounded(self.srtt + max(self._g, 4 * self.rttvar) + self._extra)

    def back_off(self) -> None:
        """A timeout fired: double the RTO (RFC 6298 5.5) until an RTT sample says otherwise."""
        self.backoffs += 1
        self.rto = min(self._max, 2 * self.rto)


class InFlight:
    """Packets (by index) in flight and to resend, and the retransmission timer.

    ``inflight[idx] = (sent at, ev, transmission)`` for every packet whose last
    transmission is unanswered; ``timers`` the same, in the order sent (a packet sent
    again has a newer entry; the older one is skipped when it comes up).

    The timer, as RFC 6298 5.1-5.7 runs its one timer: it waits for the oldest
    packet in flight and expires one RTO after the later of that packet's last
    transmission and the timer's last restart, which is the last acknowledgement of
    new data (cumulative or SACK, ``restart``) or the last timeout. Why restart on
    every ACK of new data: while ACKs come the path is alive, and a packet that is
    only late behind them is NACKed by the receiver once it is later than its
    reordering window (or arrives); the timeout is for when nothing comes back."""

    def __init__(self) -> None:
        self.inflight: dict[int, tuple[float, int, int]] = {}
        self.timers: deque[tuple[float, int, int]] = deque()  # (sent at, idx, transmission), sent order
        self.lost: deque[int] = deque()  # to retransmit, oldest first
        self.trimmed: deque[int] = deque()  # to retransmit at once (trim NACKs)
        self._queued: set[int] = set()  # in lost or trimmed
        self._tx_count: dict[int, int] = {}  # idx -> transmissions so far, while waiting to be resent
        self._restarted = float("-inf")  # the timer's last restart

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

    def restart(self, now: float) -> None:
        """New data was acknowledged: the timer starts again from ``now`` (RFC 6298 5.3)."""
        self._restarted = now

    def _oldest(self) -> tuple[float, int, int] | None:
        """(sent at, idx, ev) of the oldest packet in flight; stale entries dropped."""
        timers = self.timers
        inflight = self.inflight
        while timers:
            sent_at, idx, n = timers[0]
            rec = inflight.get(idx)
            if rec is not None and rec[2] == n:
                return sent_at, idx, rec[1]
            timers.popleft()  # acked, or declared lost and sent again since
        return None

    def deadline(self, rto: float) -> float | None:
        """When the timer expires (None: nothing in flight)."""
        head = self._oldest()
        return None if head is None else max(head[0], self._restarted) + rto

    def expired(self, now: float, rto: float) -> tuple[int, int] | None:
        """(idx, ev) of the oldest packet in flight if the timer expired, and the timer
        restarted. One packet per timeout, as TCP does (RFC 6298 5.4-5.6): the RTO then
        doubles and the next timeout comes one doubled RTO later. Why not all at once:
        when the RTT jumps (a slow target, a queue) every packet of the window passes
        the old RTO together, and resending them all would double the load that
        delayed them."""
        head = self._oldest()
        if head is None or max(head[0], self._restarted) + rto > now:
            return None
        self.timers.popleft()
        self._restarted = now
        return head[1], head[2]

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
