"""The sender's congestion window, driven by network signals (no I/O, no clock of its own).

In the spirit of NSCC, the Ultra Ethernet Transport's Network Signal-based Congestion
Control (the OCP MRC API's default profile ``uet-1.0-nscc``): a sender-based window
that reads two signals from its ACKs, the fraction of acknowledged packets that left
a queue marked (ECN CE, echoed by the receiver) and the queueing delay (the RTT above
the base RTT), and reacts once per round trip, per quadrant:

==========  ==================  =================================================
CE marked   delay above target  reaction at the end of the round trip
==========  ==================  =================================================
none        no                  proportional increase: the window grows by itself
                                times ``(target - delay) / target`` (at most doubles)
none        yes                 fair increase: ``fair_increase`` packets (the queue is
                                someone else's: grow slowly, by the same amount as all)
a fraction  no                  hold (marks from a queue that has already drained);
                                a second marked round trip in a row decreases
a fraction  yes                 multiplicative decrease: the window times
                                ``1 - beta * fraction``
==========  ==================  =================================================

Before the quadrants, a start-up: the window doubles at the end of each round trip
until the first sign of a queue, a marked round trip, a trim, a queue's loss (below)
or a round trip delayed past ``startup_delay`` targets; that round trip's reaction is
the quadrants', and the start-up never comes back (``startup_delay`` 0: none).

A round trip is one smoothed RTT of the sender (the base RTT before it has one). The
delay of a round trip is its mean RTT sample less the base RTT; the base RTT is the
configured network RTT (``base_rtt``) when given, else the smallest sample seen; the
target is ``target_ratio`` of the base RTT, at least ``target_min``. A trim NACK (the
queue passed the trim threshold) multiplies the window by ``trim_factor`` at once, at
most once per smoothed RTT. A loss NACK about a packet whose EV delivered a later
packet first (the path works: the sender tells, ``endpoints/sender.py``), after a round
trip whose delay was above ``quick_adapt_delay`` targets, is a queue that overflowed: "quick adapt" sets the window to what that round trip delivered, scaled to
an unqueued round trip (its acknowledged packets times ``(base RTT + target) / its
length``), if that is smaller, but never below ``quick_adapt_floor`` of the window, at
most once per smoothed RTT. Any other loss is a
path's (the EV states judge it) and leaves the window alone, as do timeouts (a
software switch that stalls, not a queue). A round trip with neither an RTT sample
(Karn's rule: only resends acknowledged) nor a mark changes nothing. The window stays
within ``[min_window, max_window]``.

Why these rules: with many senders into one port (an incast), every sender's packets
are marked in the same fraction once the queue passes the marking threshold and their
delays rise together, so all decrease by the same factor and increase by the same
amount: the windows converge to equal shares (AIMD) and the queue stays near the
marking threshold, below the trim threshold, without losses or timeouts. A given base
RTT matters when senders start together: a sender whose first packets already waited
in the queue takes a queued RTT for the base and holds where the others decrease;
without one, the rule "never two holds in a row" (a drained queue stops marking
within a round trip) bounds how long it holds. Why quick adapt on losses: a queue no P4
program sees (a software switch's input buffer) neither marks nor trims; it only
delays, which the window answers with the fair increase, until it drops. Delivered
per unqueued round trip is the window that fills the bottleneck without a queue, so
the reset drains the queue that overflowed in one step, where halving could take
several. Why only a working path's losses: during a cut every round trip loses the
dead EVs' packets until they are retired, and a window cut once per round trip for
them collapses (on BMv2 a crossing EV then got too few packets to be retired during a
1.5 s cut). Why a floor: the base RTT is the smallest sample, and on a software target
that is its luckiest packet, so the unqueued round trip may carry far less than the
network does (on BMv2 a few packets), and a window cut to it regrows by one packet
per round trip. The delay condition keeps random losses, which come with no queue, from
shrinking the window: in MRC congestion trims, and a loss is a path's. Why a start-up
that only a queue's signs end: where part of the delay is noise (a software target's
CPU scheduling delays packets by a few targets even at the first window), every round
trip counts as delayed and the quadrants alone grow the window by one packet per round
trip however empty the queues are; a delay of several targets, a mark, a trim or a
drop is a queue's, and ends it within the round trip that shows it. Why it is not the
default: a queue that neither marks nor delays much before it drops (BMv2's input
buffer, whose first samples are already queued and so set a high base RTT) sees the
window doubled past what it holds before any sign arrives, and the drops cost resends
and retire healthy EVs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CongestionConfig:
    """Parameters of the window; windows in packets, times in seconds."""

    initial_window: float = 16.0
    min_window: float = 1.0
    max_window: float = 256.0
    base_rtt: float | None = None  # the network's unloaded RTT; None: the smallest sample
    target_ratio: float = 0.5  # delay target: this fraction of the base RTT ...
    target_min: float = 100e-6  # ... and at least this
    beta: float = 0.5  # multiplicative decrease: the window times 1 - beta x marked fraction
    fair_increase: float = 1.0  # packets per round trip when delayed but not marked
    trim_factor: float = 0.5  # a trim NACK multiplies the window by this (once per RTT)
    quick_adapt_delay: float = 4.0  # a loss after a round trip delayed by this many targets: quick adapt
    quick_adapt_floor: float = 0.5  # ... which leaves at least this share of the window
    # Start-up: the window doubles each round trip until the first sign of a queue (a
    # mark, a trim, a queue's loss, or a round trip delayed past this many targets);
    # 0 (the default): no start-up, the quadrants from the first round trip
    startup_delay: float = 0.0

    def check(self) -> None:
        """Raise ValueError naming the parameter that is out of range."""
        if not 1 <= self.min_window <= self.initial_window <= self.max_window:
            raise ValueError("congestion: need 1 <= min_window <= initial_window <= max_window "
                             f"(got {self.min_window:g}, {self.initial_window:g}, {self.max_window:g})")
        if not 0 < self.beta <= 1 or not 0 < self.trim_factor < 1:
            raise ValueError("congestion: beta must be in (0, 1] and trim_factor in (0, 1)")
        if not 0 < self.quick_adapt_floor < 1:
            raise ValueError("congestion: quick_adapt_floor must be in (0, 1)")
        if min(self.target_ratio, self.target_min, self.fair_increase, self.quick_adapt_delay) < 0:
            raise ValueError("congestion: target_ratio, target_min, fair_increase and quick_adapt_delay "
                             "must be >= 0")
        if not 0 <= self.startup_delay < float("inf"):
            raise ValueError(f"congestion: startup_delay {self.startup_delay:g} must be a number of targets, "
                             "0 (no start-up) or more")
        if self.base_rtt is not None and not self.base_rtt > 0:
            raise ValueError("congestion: base_rtt must be more than 0 seconds (or none: measured)")


class Window:
    """The congestion window of one sender; ``cwnd`` is the number of packets it may
    have in flight. Counters of the reactions are kept for the sender's report."""

    def __init__(self, config: CongestionConfig = CongestionConfig(), now: float = 0.0) -> None:
        config.check()
        self.cfg = config
        self.cwnd = float(config.initial_window)
        self.cwnd_min = self.cwnd
        self.base_rtt: float | None = config.base_rtt
        self._hold_until = now
        self._round_end: float | None = None  # the first ACK starts the first round trip
        self._acked = self._marked = self._samples = 0
        self._rtt_sum = 0.0
        self._held = False  # the last round trip was a hold
        self._round_start = now
        self._last_round: tuple[int, float] | None = None  # (packets acknowledged, length) of the last round trip
        self._last_delay: float | None = None  # the last round trip's mean delay; None: no RTT sample
        self._loss_hold_until = now
        self.startup = config.startup_delay > 0  # doubling each round trip until a sign of a queue
        self.counts = {"startup": 0, "increase": 0, "fair_increase": 0, "hold": 0, "decrease": 0,
                       "trim_decrease": 0, "loss_decrease": 0}

    @property
    def target(self) -> float | None:
        """The delay target (seconds above the base RTT); None before any RTT sample."""
        if self.base_rtt is None:
            return None
        return max(self.cfg.target_min, self.cfg.target_ratio * self.base_rtt)

    def _clamp(self) -> None:
        self.cwnd = min(self.cfg.max_window, max(self.cfg.min_window, self.cwnd))
        self.cwnd_min = min(self.cwnd_min, self.cwnd)

    def on_ack(self, acked: int, rtt: float | None, ce: bool, now: float, srtt: float | None) -> None:
        """An ACK at ``now`` that newly acknowledged ``acked`` packets, its RTT sample
        (None: only retransmitted packets), whether it echoed CE, and the sender's
        smoothed RTT (the length of the next round trip)."""
        if acked <= 0:
            return
        if rtt is not None and rtt > 0:
            if self.cfg.base_rtt is None:
                self.base_rtt = rtt if self.base_rtt is None else min(self.base_rtt, rtt)
            self._rtt_sum += rtt
            self._samples += 1
        self._acked += acked
        self._marked += acked if ce else 0
        if self._round_end is None:
            self._round_start = now
            self._round_end = now + (srtt or self.base_rtt or 0.0)
        if now >= self._round_end:
            if now > self._round_start:
                self._last_round = (self._acked, now - self._round_start)
            self._end_round()
            self._round_start = now
            self._round_end = now + (srtt or self.base_rtt or 0.0)

    def _end_round(self) -> None:
        fraction = self._marked / self._acked
        target = self.target
        if self._samples and target is not None and self.base_rtt is not None:
            delay = self._rtt_sum / self._samples - self.base_rtt
            delayed = delay > target
            self._last_delay = delay
        else:
            self._last_delay = None
            if not fraction:
                # Nothing measured and nothing marked (every packet acknowledged was a
                # resend, Karn's rule, or no RTT yet): no reason to grow. Before the
                # first sample a round trip has no length, so every ACK would end one.
                self._acked = self._marked = 0
                return
            delay, delayed = 0.0, True  # marked, delay unknown: the marks alone decide
        held, self._held = self._held, False
        if self.startup and (fraction > 0 or delay > self.cfg.startup_delay * (target or 0.0)):
            self.startup = False  # a mark, or a queue's delay: the quadrants from this round trip on
        if self.startup:
            self.cwnd *= 2
            self.counts["startup"] += 1
        elif fraction > 0 and (delayed or held):
            self.cwnd *= 1 - self.cfg.beta * fraction
            self.counts["decrease"] += 1
        elif fraction > 0:
            self._held = True
            self.counts["hold"] += 1
        elif delayed:
            self.cwnd += self.cfg.fair_increase
            self.counts["fair_increase"] += 1
        else:
            room = 1.0 if not target else max(0.0, (target - delay) / target)
            self.cwnd += self.cwnd * min(1.0, room)
            self.counts["increase"] += 1
        self._clamp()
        self._acked = self._marked = self._samples = 0
        self._rtt_sum = 0.0

    def on_trim(self, now: float, srtt: float | None) -> bool:
        """A trim NACK: the window times ``trim_factor``, at most once per ``srtt`` (the
        later trims of one overflow are the same event). True if it was applied."""
        self.startup = False
        if now < self._hold_until:
            return False
        self.cwnd *= self.cfg.trim_factor
        self._clamp()
        self._hold_until = now + (srtt if srtt is not None else 0.0)
        self.counts["trim_decrease"] += 1
        return True

    def on_loss(self, now: float, srtt: float | None) -> bool:
        """A loss NACK. If the last round trip's mean delay was above
        ``quick_adapt_delay`` targets (a queue that overflowed), quick adapt: the
        window set to the packets that round trip delivered times ``(base RTT +
        target) / its length`` when that is smaller (but at least
        ``quick_adapt_floor`` of the window), at most once per ``srtt`` (the
        later losses of one overflow are the same event). Nothing before the first
        complete round trip. True if the window shrank."""
        self.startup = False
        target = self.target
        if (now < self._loss_hold_until or self._last_round is None or self.base_rtt is None
                or target is None or self._last_delay is None
                or self._last_delay <= self.cfg.quick_adapt_delay * target):
            return False
        acked, length = self._last_round
        unqueued = self.base_rtt + target
        achieved = max(acked * unqueued / length, self.cwnd * self.cfg.quick_adapt_floor)
        if achieved >= self.cwnd:
            return False
        self.cwnd = achieved
        self._clamp()
        self._loss_hold_until = now + (srtt if srtt is not None else 0.0)
        self.counts["loss_decrease"] += 1
        return True
