"""Congestion control (endpoints/congestion.py) alone and in the real sender, in a
simulated incast.

Why: the window must shrink only on the signals that name a queue of its own (CE
together with delay, trims), grow on the others, and, in an incast (several senders
into one limited port), hold the port's queue near its marking threshold, well below
the trim threshold, with no timeouts and equal shares. The incast here is a single
FIFO served at a fixed rate that marks and trims exactly as fabric.p4's egress does
(CE above the ``ecn_config`` depth, trim above the ``trim_config`` depth); the senders
and the receiver are the real state machines.
"""

from __future__ import annotations

import heapq
import random

import pytest

from fabric.plan import EvPath
from endpoints import wire
from endpoints.congestion import CongestionConfig, Window
from endpoints.transport import Receiver, Sender, SenderConfig
from endpoints.wire import DATA_HDR_LEN, OP_WRITE

ECT0, CE, TRIM_DSCP = 0b10, 0b11, 62


# ---- the window alone --------------------------------------------------------


def test_the_four_quadrants_and_their_amounts() -> None:
    """One reaction per round trip (one smoothed RTT, here 1 ms), from the round trip's
    marked fraction and mean RTT; base RTT 1 ms (the first sample), target 0.5 ms. No
    start-up (the default): the quadrants from the first round trip."""
    w = Window(CongestionConfig(initial_window=16, min_window=2, max_window=64, target_ratio=0.5,
                                target_min=100e-6, beta=0.5))
    ms = 1e-3
    w.on_ack(4, 1 * ms, False, 0.0, None)  # starts the first round trip, ending at 1 ms
    assert (w.base_rtt, w.target, w.cwnd) == (1 * ms, 0.5 * ms, 16.0)
    w.on_ack(4, 1.25 * ms, False, 1 * ms, 1 * ms)  # mean 1.125 ms: delay 0.125, 3/4 of the target left
    assert w.cwnd == pytest.approx(16 + 16 * 0.75)
    w.on_ack(2, 2 * ms, False, 1.5 * ms, 1 * ms)
    w.on_ack(2, 2 * ms, False, 2 * ms, 1 * ms)  # delayed (1 ms), not marked: fair increase, +1
    assert w.cwnd == pytest.approx(29.0)
    w.on_ack(4, 2 * ms, True, 2.5 * ms, 1 * ms)
    w.on_ack(4, 2 * ms, False, 3 * ms, 1 * ms)  # half the packets marked, delayed: x (1 - 0.5 x 0.5)
    assert w.cwnd == pytest.approx(21.75)
    w.on_ack(4, 1.2 * ms, True, 4 * ms, 1 * ms)  # all marked, delay 0.2 ms under the target: hold
    assert w.cwnd == pytest.approx(21.75)
    w.on_ack(4, 1.2 * ms, True, 5 * ms, 1 * ms)  # a second hold in a row decreases: x (1 - 0.5)
    assert w.cwnd == pytest.approx(10.875)
    w.on_ack(4, 1.2 * ms, True, 6 * ms, 1 * ms)  # after a decrease: a hold again
    assert w.cwnd == pytest.approx(10.875)
    assert w.counts == {"startup": 0, "increase": 1, "fair_increase": 1, "hold": 2, "decrease": 2,
                        "trim_decrease": 0, "loss_decrease": 0}


def test_a_queue_that_marks_nothing_grows_the_window_by_one_per_round_trip() -> None:
    """The defaults, and a queue no P4 program sees (a software switch's receive ring):
    after a first RTT sample of 1 ms (the base RTT, so the target is 0.5 ms) every RTT
    is 5 ms and nothing is marked. Each round trip (one smoothed RTT, here 9 ms, with the
    ACKs 10 ms apart: one ACK each) is delayed and unmarked: the fair increase, 1 packet each, from 16 to 26 after
    10 round trips, and no decrease ever. A marked round trip then decreases (x (1 - 0.5
    x 1/2) for half the packets marked), and a trim halves."""
    w = Window(CongestionConfig())
    assert (w.cwnd, w.cfg.max_window, w.startup) == (16.0, 256.0, False)
    ms = 1e-3
    w.on_ack(4, 1 * ms, False, 0.0, None)
    for k in range(1, 11):
        w.on_ack(4, 5 * ms, False, k * 10 * ms, 9 * ms)
    assert w.cwnd == pytest.approx(26.0)
    assert w.counts["fair_increase"] == 10 and w.counts["decrease"] == 0 and w.counts["startup"] == 0
    w.on_ack(4, 5 * ms, True, 105 * ms, 9 * ms)
    w.on_ack(4, 5 * ms, False, 110 * ms, 9 * ms)
    assert w.cwnd == pytest.approx(26.0 * 0.75)
    assert w.on_trim(111 * ms, 9 * ms) and w.cwnd == pytest.approx(26.0 * 0.75 * 0.5)


def test_the_start_up_doubles_until_a_round_trip_is_delayed_past_four_targets() -> None:
    """``startup_delay`` 4 (``--cc-startup-delay 4``); base RTT 1 ms (the first sample),
    target 0.5 ms: the start-up ends at a delay of more than 4 targets, 2 ms. Round trips of mean RTT 1 ms and 2 ms (delays 0 and 1 ms,
    2 targets: delayed, yet under 4 targets) double the window, 16 -> 32 -> 64; one of
    3.5 ms (2.5 ms, 5 targets) ends the start-up, and its own reaction is the quadrants'
    (delayed, unmarked: + 1). It never comes back: a round trip delayed 2 targets again
    now grows the window by 1."""
    w = Window(CongestionConfig(initial_window=16, max_window=256, startup_delay=4))
    ms = 1e-3
    w.on_ack(4, 1 * ms, False, 0.0, None)
    w.on_ack(4, 1 * ms, False, 1 * ms, 1 * ms)
    assert (w.cwnd, w.startup) == (32.0, True)
    w.on_ack(4, 2 * ms, False, 2 * ms, 1 * ms)
    assert (w.cwnd, w.startup) == (64.0, True)
    w.on_ack(4, 3.5 * ms, False, 3 * ms, 1 * ms)
    assert (w.cwnd, w.startup) == (65.0, False)
    w.on_ack(4, 2 * ms, False, 4 * ms, 1 * ms)
    assert w.cwnd == 66.0
    assert w.counts["startup"] == 2 and w.counts["fair_increase"] == 2


def _ended_by_a_mark(w: Window) -> None:
    w.on_ack(4, 1 * 1e-3, True, 2e-3, 1e-3)  # marked, unqueued: the quadrants' hold


def _ended_by_a_trim(w: Window) -> None:
    assert w.on_trim(1.5e-3, 1e-3)  # 32 -> 16


def _ended_by_a_loss(w: Window) -> None:
    assert not w.on_loss(1.5e-3, 1e-3)  # no queued round trip before it: quick adapt leaves the window


@pytest.mark.parametrize("sign, after", [(_ended_by_a_mark, 32.0), (_ended_by_a_trim, 16.0), (_ended_by_a_loss, 32.0)],
                         ids=["mark", "trim", "loss"])
def test_a_mark_a_trim_or_a_queues_loss_ends_the_start_up(sign, after: float) -> None:
    """After one unqueued round trip (16 -> 32), a CE mark, a trim NACK or a loss NACK
    of a working path (the sender's call of ``on_loss``) ends the start-up at once:
    a round trip delayed 2 targets then grows the window by 1, where the start-up
    would double it."""
    w = Window(CongestionConfig(initial_window=16, max_window=256, startup_delay=4))
    ms = 1e-3
    w.on_ack(4, 1 * ms, False, 0.0, None)
    w.on_ack(4, 1 * ms, False, 1 * ms, 1 * ms)
    assert (w.cwnd, w.startup) == (32.0, True)
    sign(w)
    assert (w.cwnd, w.startup) == (after, False)
    w.on_ack(4, 2 * ms, False, 5 * ms, 1 * ms)  # one round trip, delay 1 ms: 2 targets
    assert w.cwnd == after + 1


def test_round_trips_without_an_rtt_sample_grow_nothing() -> None:
    """ACKs that carry no RTT sample (every packet they acknowledge was a resend:
    Karn's rule) and no mark say nothing of the queue: the window stays. Before any
    sample a round trip has no length, so each such ACK would otherwise end one and
    double the window (a sender whose first packets were all trimmed went 2 -> 108 in
    six ACKs). Marked ACKs without a sample still decrease."""
    w = Window(CongestionConfig(initial_window=2, min_window=1, max_window=256))
    for k in range(6):
        w.on_ack(1, None, False, k * 1e-4, None)
    assert w.cwnd == 2.0 and w.counts["increase"] == 0
    w.on_ack(1, None, True, 1e-3, None)
    assert w.cwnd == pytest.approx(1.0) and w.counts["decrease"] == 1
    w.on_ack(2, 1e-3, False, 2e-3, None)  # the first sample: base RTT 1 ms, no delay, grows
    assert w.cwnd == pytest.approx(2.0) and w.counts["increase"] == 1


def test_a_configured_base_rtt_is_kept_whatever_the_samples() -> None:
    w = Window(CongestionConfig(initial_window=16, base_rtt=1e-3))
    w.on_ack(4, 0.5e-3, False, 0.0, None)
    w.on_ack(4, 3e-3, True, 1e-3, 1e-3)  # mean 1.75 ms: 0.75 ms above 1 ms, target 0.5 ms: decrease
    assert w.base_rtt == 1e-3
    assert w.cwnd == pytest.approx(16 * (1 - 0.5 * 0.5))


def test_trims_halve_once_per_rtt_and_the_window_stays_in_bounds() -> None:
    w = Window(CongestionConfig(initial_window=16, min_window=3, max_window=20))
    assert w.on_trim(0.0, 1e-3) and w.cwnd == 8.0
    assert not w.on_trim(0.5e-3, 1e-3) and w.cwnd == 8.0  # the same overflow
    assert w.on_trim(1.1e-3, 1e-3) and w.cwnd == 4.0
    assert w.on_trim(2.2e-3, 1e-3) and w.cwnd == 3.0  # the floor
    assert w.cwnd_min == 3.0
    for k in range(10):
        w.on_ack(4, 1e-3, False, k * 1e-3, 1e-3)
    assert w.cwnd == 20.0  # the ceiling
    w.on_ack(0, 5e-3, True, 20e-3, 1e-3)  # acknowledging nothing changes nothing
    assert w.cwnd == 20.0


@pytest.mark.parametrize("cfg, word", [
    (CongestionConfig(initial_window=4, min_window=8), "min_window"),
    (CongestionConfig(beta=0.0), "beta"),
    (CongestionConfig(target_min=-1.0), "target_min"),
    (CongestionConfig(base_rtt=0.0), "base_rtt"),
    (CongestionConfig(startup_delay=-1.0), "startup_delay"),
    (CongestionConfig(startup_delay=float("nan")), "startup_delay"),
])
def test_bad_parameters_are_refused_by_name(cfg: CongestionConfig, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        Window(cfg)


def test_the_sender_refuses_a_bad_beta() -> None:
    with pytest.raises(ValueError, match="sender: congestion: beta"):
        Sender(b"x", [EvPath(1, 0, 0)], SenderConfig(cc_beta=2.0))


# ---- an incast ---------------------------------------------------------------

RATE = 10_000.0  # packets/s out of the receiver's port
ONE_WAY = 50e-6  # each way, besides the queue
ECN_AT, TRIM_AT = 16, 32  # the controller's host-port marking depth, the default trim depth


class Port:
    """The limited egress port: FIFO, one packet per 1 / RATE; depth = packets that
    arrived and have not left (what v1model's enq_qdepth counts). ``marks=False``: a
    buffer no P4 program sees (a software switch's input buffer), which neither marks
    nor trims but drops what arrives when it holds ``capacity`` packets."""

    def __init__(self, marks: bool = True, capacity: int | None = None) -> None:
        self.departures: list[float] = []
        self.busy_until = 0.0
        self.depths: list[tuple[float, int]] = []
        self.marked = self.trimmed = self.dropped = 0
        self.marks, self.capacity = marks, capacity

    def enqueue(self, t: float, payload: bytes) -> tuple[float, bytes, int] | None:
        while self.departures and self.departures[0] <= t:
            heapq.heappop(self.departures)
        depth = len(self.departures)
        self.depths.append((t, depth))
        if self.capacity is not None and depth >= self.capacity:
            self.dropped += 1
            return None
        if self.marks and depth > TRIM_AT:  # trimmed: the header only, in the priority queue (no wait)
            self.trimmed += 1
            return t + ONE_WAY, payload[:DATA_HDR_LEN], TRIM_DSCP << 2 | ECT0
        tclass = ECT0
        if self.marks and depth > ECN_AT:
            tclass = CE
            self.marked += 1
        self.busy_until = max(self.busy_until, t) + 1 / RATE
        heapq.heappush(self.departures, self.busy_until)
        return self.busy_until + ONE_WAY, payload, tclass


def incast(n: int, nbytes: int, cfg: SenderConfig, limit: float = 5.0, port: Port | None = None):
    data = [random.Random(k).randbytes(nbytes) for k in range(n)]
    peers = [f"fd00:0:0:{k + 1}::1" for k in range(n)]
    evs = [EvPath(0x4000 + i, i % 4, i // 4) for i in range(8)]
    senders = [Sender(d, evs, SenderConfig(**{**cfg.__dict__, "seed": k}), now=0.0) for k, d in enumerate(data)]
    receiver = Receiver()
    port = port or Port()
    events: list[tuple[float, int, str, int, int, bytes, int]] = []  # (t, seq, to, who, ev, bytes, tclass)
    seq = 0
    t = 0.0

    def push(at: float, to: str, who: int, ev: int, body: bytes, tclass: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (at, seq, to, who, ev, body, tclass))

    def from_receiver(now: float, txs) -> None:
        for tx in txs:
            push(now + 2 * ONE_WAY, "sender", peers.index(tx.peer), tx.ev, tx.payload, 0)

    while not all(s.finished for s in senders) and t <= limit:
        for k, s in enumerate(senders):
            for tx in s.poll(t):
                if tx.payload[0] == OP_WRITE:
                    arrival = port.enqueue(t + ONE_WAY, tx.payload)
                    if arrival is not None:
                        at, body, tclass = arrival
                        push(at, "receiver", k, tx.ev, body, tclass)
                else:
                    push(t + 2 * ONE_WAY, "receiver", k, tx.ev, tx.payload, 0)
        from_receiver(t, receiver.poll(t))
        wakeups = [w for w in [s.next_wakeup() for s in senders] + [receiver.next_wakeup()] if w is not None]
        if events:
            wakeups.append(events[0][0])
        t = max(min(wakeups), t)
        while events and events[0][0] <= t:
            _, _, to, who, ev, body, tclass = heapq.heappop(events)
            if to == "receiver":
                from_receiver(t, receiver.on_packet(body, t, peers[who], ev, tclass))
            else:
                senders[who].on_packet(body, t)
    return data, senders, receiver, port


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


BASE_RTT = 2 * ONE_WAY + 1 / RATE + 2 * ONE_WAY  # to the port, through it, on, and back


@pytest.mark.parametrize("base_rtt, settled, startup", [(BASE_RTT, 0.01, 0.0), (None, 0.03, 0.0), (None, 0.03, 4.0)],
                         ids=["given-base-rtt", "measured", "measured-start-up"])
def test_four_senders_into_one_port_keep_its_queue_near_the_marking_depth(base_rtt: float | None,
                                                                           settled: float, startup: float) -> None:
    """4 x 300 KB into a 10,000 packets/s port: every byte delivered, no timeout, no EV
    retired, equal goodputs (Jain >= 0.9), and once the start-up is over (4 initial
    windows of 16 = 64 packets against a trim depth of 32) the queue never passes the
    marking depth by more than 8 packets, so never trims. With the base RTT given the
    start-up is over within 100 packet times (10 ms); measured, a sender whose first
    packets waited behind the others' takes longer (300 packet times). With the start-up
    (``--cc-startup-delay 4``) the same: the first windows' marks and trims end it."""
    nbytes = 300_000
    data, senders, receiver, port = incast(4, nbytes, SenderConfig(mtu=1000, cc_base_rtt=base_rtt,
                                                                   cc_startup_delay=startup))
    conns = {c.peer: c for c in receiver.conns.values()}
    for k, s in enumerate(senders):
        assert s.ok, s.error
        c = conns[f"fd00:0:0:{k + 1}::1"]
        assert c.state == wire.STATE_VERIFIED and bytes(c.buf) == data[k]
        r = s.report()
        assert r["retransmissions"].get("timeout", 0) == 0, r["retransmissions"]
        assert r["evs_retired"] == 0
    goodputs = [s.report()["goodput_bps"] for s in senders]
    assert jain(goodputs) >= 0.9, goodputs
    late = [d for t, d in port.depths if t > settled]
    assert late and max(late) <= ECN_AT + 8, max(late)
    assert port.marked > 0  # the marks did the work
    assert not any(s.cc.startup for s in senders)  # over, if there was one
    # The port was kept busy: 1,200 packets at 10,000/s take 0.12 s; finishing within
    # 0.15 s means the windows never collapsed.
    assert max(s.report()["completion_time_s"] for s in senders) < 0.15


# ---- quick adapt: a loss after a queued round trip -----------------------------


@pytest.mark.parametrize("initial, after", [(20, 12.0), (64, 32.5)], ids=["delivered", "halved-at-most"])
def test_quick_adapt_sets_the_window_to_what_an_unqueued_round_trip_would_carry(initial: float,
                                                                                after: float) -> None:
    """Base RTT 1 ms (given), target 0.5 ms, so quick adapt needs a delay above 4 x 0.5
    = 2 ms. One round trip of 4 ms (the smoothed RTT) acknowledges 10 + 10 + 12 = 32
    packets with RTTs of 5 ms (delay 4 ms): the fair increase adds 1. A loss then sets
    the window to 32 packets x (1 + 0.5) ms / 4 ms = 12 (from 21), but never below half
    of it (from 65: 32.5); a second loss within the next smoothed RTT is the same
    overflow."""
    ms = 1e-3
    w = Window(CongestionConfig(initial_window=initial, max_window=128, base_rtt=1 * ms))
    w.on_ack(10, 5 * ms, False, 0.0, 4 * ms)
    w.on_ack(10, 5 * ms, False, 2 * ms, 4 * ms)
    w.on_ack(12, 5 * ms, False, 4 * ms, 4 * ms)
    assert w.cwnd == initial + 1 and w.counts["fair_increase"] == 1
    assert w.on_loss(4.1 * ms, 4 * ms) and w.cwnd == pytest.approx(after)
    assert not w.on_loss(5 * ms, 4 * ms) and w.cwnd == pytest.approx(after)
    assert w.counts["loss_decrease"] == 1


@pytest.mark.parametrize("rtt_ms, initial, why", [
    (2.5, 64, "delay 1.5 ms, under 4 targets: a path's loss, not a queue's"),
    (5.0, 8, "the round trip carried more than the window (32 x 1.5 / 4 = 12 > 9): nothing to take back"),
])
def test_quick_adapt_leaves_the_window_alone(rtt_ms: float, initial: float, why: str) -> None:
    ms = 1e-3
    w = Window(CongestionConfig(initial_window=initial, max_window=128, base_rtt=1 * ms))
    assert not w.on_loss(0.0, 4 * ms)  # no round trip yet
    w.on_ack(16, rtt_ms * ms, False, 0.0, 4 * ms)
    w.on_ack(16, rtt_ms * ms, False, 4 * ms, 4 * ms)
    before = w.cwnd
    assert not w.on_loss(4.1 * ms, 4 * ms), why
    assert w.cwnd == before and w.counts["loss_decrease"] == 0


def _through_a_buffer_that_only_drops(monkeypatch: pytest.MonkeyPatch | None) -> tuple[dict, Port]:
    if monkeypatch is not None:  # the broken variant: losses never move the window
        monkeypatch.setattr(Window, "on_loss", lambda self, now, srtt: False)
    port = Port(marks=False, capacity=32)
    data, senders, receiver, _ = incast(1, 2_000_000, SenderConfig(mtu=1000), limit=10.0, port=port)
    s = senders[0]
    assert s.ok, s.error
    conn = next(iter(receiver.conns.values()))
    assert bytes(conn.buf) == data[0]
    return s.report(), port


def test_a_buffer_that_only_drops_costs_few_resends(monkeypatch: pytest.MonkeyPatch) -> None:
    """One sender, the defaults, 2,000 packets through a 10,000 packets/s port whose
    32-packet buffer neither marks nor trims (BMv2's input buffer is such a queue).
    Unmarked, the window grows by the fair increase towards its ceiling of 128, and
    once more than the buffer's 32 packets (plus the 3 or so on the wire) are in
    flight it drops. Quick adapt after the first losses brings the window back under
    what the buffer holds: under 5% of the packets resent. Without it (the window left
    alone by losses) it keeps growing into the buffer: more than 5% resent."""
    report, port = _through_a_buffer_that_only_drops(None)
    resent = report["retransmissions"]["total"]
    assert port.dropped > 0 and report["window"]["reactions"]["loss_decrease"] >= 1
    assert resent < 2000 * 5 // 100, (report["retransmissions"], report["window"])
    broken, port = _through_a_buffer_that_only_drops(monkeypatch)
    assert broken["retransmissions"]["total"] >= 2000 * 5 // 100, broken["retransmissions"]


def _through_scheduling_noise(startup_delay: float) -> dict:
    from tests.endpoints.simnet import SimNet, run_transfer

    evs = [EvPath(0x4000 + i, i % 4, i // 4) for i in range(8)]
    data = random.Random(3).randbytes(2000 * 1000)
    net = SimNet(seed=1, base_delay=100e-6, jitter=300e-6)
    run = run_transfer(data, evs, net, sender_cfg=SenderConfig(mtu=1000, cc_startup_delay=startup_delay))
    assert run.sender.ok, run.sender.error
    assert bytes(run.conn.buf) == data
    return run.sender.report()


def test_a_delay_that_is_only_noise_does_not_hold_the_start_up_back() -> None:
    """A network with no queue whose every packet is up to 300 us late each way (as a
    software target's scheduling delays packets): the base RTT is the luckiest
    sample, about 200 us, so the target is about 100 us, and a round trip's mean delay
    is about 300 us, 1 to 4 targets, never marked. With the start-up
    (``--cc-startup-delay 4``) the window doubles from 16 to 128, its ceiling, in 3
    round trips (32, 64, 128) and stays there: no round trip's delay passes 4 targets,
    no fair increase, nothing resent. With the defaults (no start-up) every such round
    trip counts as delayed and adds 1 packet: after 2,000 packets the window is still
    under 128."""
    report = _through_scheduling_noise(4.0)
    window = report["window"]
    assert window["now"] == 128.0 and window["reactions"]["startup"] >= 3, window
    assert window["reactions"]["fair_increase"] == 0 and report["retransmissions"]["total"] == 0, report
    default = _through_scheduling_noise(SenderConfig.cc_startup_delay)["window"]
    assert default["reactions"]["startup"] == 0, default
    assert default["now"] < 128.0 and default["reactions"]["fair_increase"] >= 10, default


def _through_a_dead_path(monkeypatch: pytest.MonkeyPatch | None) -> dict:
    from tests.endpoints.simnet import SimNet, run_transfer

    if monkeypatch is not None:  # the broken variant: every loss NACK taken for a queue's drop
        real = Sender._declare_lost
        monkeypatch.setattr(Sender, "_declare_lost",
                            lambda self, idx, ev, cause, now: real(self, idx, ev, cause, now) or cause == "nack")
    evs = [EvPath(0x4000 + i, i % 4, i // 4) for i in range(8)]
    dead = {evs[0].ev, evs[4].ev}  # plane 0's two EVs: every packet on them lost
    data = random.Random(3).randbytes(2000 * 1000)
    # Every round trip delayed: RTTs of about 600 us against a given base RTT of 10 us
    # (target 100 us, the floor: 4 targets are 400 us), so only the dead path's
    # evidence keeps quick adapt from acting.
    net = SimNet(seed=3, base_delay=300e-6, dead=lambda t, ev: ev in dead)
    run = run_transfer(data, evs, net, sender_cfg=SenderConfig(mtu=1000, cc_base_rtt=10e-6, ev_min_active=2))
    assert run.sender.ok, run.sender.error
    report = run.sender.report()
    assert {e["ev"] for e in report["ev_events"] if e["event"] == "retired"} == dead
    return report


def test_a_dead_paths_losses_leave_the_window_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two of 8 EVs drop everything and every round trip is delayed past 4 targets: the
    two EVs are retired at their second loss each, and no loss of theirs shrinks the
    window (no later packet on a dead EV is ever acknowledged: the losses are the
    path's). Taking every loss for a queue's instead, quick adapt acts."""
    report = _through_a_dead_path(None)
    assert report["window"]["reactions"]["loss_decrease"] == 0, report["window"]
    broken = _through_a_dead_path(monkeypatch)
    assert broken["window"]["reactions"]["loss_decrease"] >= 1, broken["window"]
