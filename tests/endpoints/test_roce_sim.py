"""The RoCE baseline's state machines (endpoints/roce_sender.py, roce_receiver.py) over
the simulated network (tests/endpoints/simnet.py), no sockets.

The network here has no jitter: 100 us each way, so every packet's fate and time is
known from the test's own rules (which transmissions of which PSN it loses, when a
path is dead, which packets carry CE). The expected PSN sequences, counts and
times are written out from those rules; the bytes placed are checked against the
bytes sent. The first PSN is 2**24 - 8, so every transfer wraps its PSNs.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace

import pytest

from endpoints import wire
from endpoints.dcqcn import DcqcnConfig
from endpoints.roce_config import RoceReceiverConfig, RoceSenderConfig
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender
from tests.endpoints.simnet import DATA_OPCODES, Sent, SimNet, drive

EV = 20005
FIRST_PSN = (1 << 24) - 8
ONE_WAY = 100e-6  # SimNet's base delay
# Go-back-N tests: no rate limit to speak of (10**12 b/s), no rate control
FAST = RoceSenderConfig(mtu=1000, message_size=8000, window=64, ack_every=4, ack_timeout=0.05, cc="none",
                        dcqcn=DcqcnConfig(line_rate=1e12, min_rate=1e6), first_psn=FIRST_PSN, burst=64)


def idx(payload: bytes) -> int:
    """The packet index of a data packet or an ACK/NAK (its BTH PSN)."""
    return (int.from_bytes(payload[9:12], "big") - FIRST_PSN) & 0xFFFFFF


@dataclass
class RoceRun:
    sender: RoceSender
    receiver: RoceReceiver
    to_receiver: list[Sent]
    to_sender: list[Sent]
    end: float

    @property
    def qp(self):  # the receiver's one QP
        (c,) = self.receiver.conns.values()
        return c

    def data_idx(self) -> list[int]:
        """The packet indices of the data packets sent, in order."""
        return [idx(s.payload) for s in self.to_receiver if s.payload[0] in DATA_OPCODES]

    def feedback(self, opcode: int, syndrome: int | None = None) -> list[Sent]:
        return [s for s in self.to_sender if s.payload[0] == opcode
                and (syndrome is None or s.payload[12] == syndrome)]


def run(data: bytes, net: SimNet, cfg: RoceSenderConfig = FAST, rcfg: RoceReceiverConfig | None = None,
        limit: float = 30.0) -> RoceRun:
    sender = RoceSender(data, EV, cfg)
    receiver = RoceReceiver(rcfg)
    to_rx, to_tx, _delivered, _good, end = drive(sender, receiver, net, {EV: 0}, limit)
    return RoceRun(sender, receiver, to_rx, to_tx, end)


def lose_transmissions(which: dict[int, set[int]]):  # a SimNet.lose rule
    """Lose transmission k (1 = the first) of packet i for each k in which[i]."""
    seen: Counter[int] = Counter()

    def lose(t: float, payload: bytes, back: bool) -> bool:
        if back or payload[0] not in DATA_OPCODES:
            return False
        i = idx(payload)
        seen[i] += 1
        return seen[i] in which.get(i, set())

    return lose


def payload(n: int) -> bytes:
    return random.Random(n).randbytes(n)


def assert_verified(r: RoceRun, data: bytes) -> None:
    assert r.sender.ok, r.sender.error
    assert r.qp.state == wire.STATE_VERIFIED
    assert bytes(r.qp.buf) == data


def test_clean_run_sends_each_psn_once_in_order_on_one_ev() -> None:
    data = payload(19_500)  # 20 packets, the last 500 bytes: messages of 8, 8 and 4 packets
    r = run(data, SimNet())
    assert_verified(r, data)
    assert r.data_idx() == list(range(20))
    assert {s.ev for s in r.to_receiver} == {EV} and {s.ev for s in r.to_sender} == {EV}
    ops = [s.payload[0] for s in r.to_receiver if s.payload[0] in DATA_OPCODES]
    first, middle, last = wire.OP_WRITE_FIRST, wire.OP_WRITE_MIDDLE, wire.OP_WRITE_LAST
    assert ops == [first] + [middle] * 6 + [last] + [first] + [middle] * 6 + [last] + [first, middle, middle, last]
    # ACKs answer AckReq: every 4th packet and the last of each message: 3, 7, 11, 15, 19
    acks = r.feedback(wire.OP_ACK, wire.SYNDROME_ACK)
    assert [idx(a.payload) for a in acks] == [3, 7, 11, 15, 19]
    # the AETH's MSN counts the messages completed: none by packet 3, one by 7 and 11, ...
    assert [int.from_bytes(a.payload[13:16], "big") for a in acks] == [0, 1, 1, 2, 3]
    rep = r.sender.report()
    assert rep["go_back_n"] == {"rewinds": 0, "resent": 0, "naks_received": 0, "naks_stale": 0, "timeouts": 0,
                                "retries": 0, "retries_most_in_row": 0, "retry_count": 7, "ack_timeout_s": 0.05}
    assert rep["state"] == "complete" and rep["verified"] and rep["packets_sent"] == 20


def test_go_back_n_after_two_gaps_resends_everything_from_each_naked_psn() -> None:
    """Packet 5's first transmission and packet 12's second are lost. The receiver
    takes 0-4, NAKs PSN 5 once at packet 6 and drops 6-19; the sender goes back to 5
    and resends 5-19; of those 5-11 are placed, 12 is lost, 13 opens a new gap: one NAK
    for PSN 12, 14-19 dropped; the sender resends 12-19."""
    data = payload(20_000)
    r = run(data, SimNet(lose=lose_transmissions({5: {1}, 12: {2}})))
    assert_verified(r, data)
    assert r.data_idx() == list(range(20)) + list(range(5, 20)) + list(range(12, 20))
    naks = r.feedback(wire.OP_ACK, wire.SYNDROME_NAK_PSN_SEQUENCE)
    assert [idx(n.payload) for n in naks] == [5, 12]  # the BTH PSN of a NAK: the PSN expected
    assert [int.from_bytes(n.payload[13:16], "big") for n in naks] == [0, 1]  # MSN: message 0 done by PSN 12
    g = r.sender.report()["go_back_n"]
    assert (g["naks_received"], g["rewinds"], g["resent"], g["timeouts"]) == (2, 2, 15 + 8, 0)
    assert (g["retries"], g["retries_most_in_row"]) == (2, 1)  # NAK 12 acknowledged 5-11 first: progress
    counts = r.qp.report()["counts"]
    assert counts["naks"] == 2
    assert counts["out_of_sequence"] == len(range(6, 20)) + len(range(13, 20))
    assert counts["packets"] == 20 and counts["duplicates"] == 0


def test_one_nak_per_gap_however_many_packets_follow_it() -> None:
    """60 packets, the first transmission of packet 2 lost: 57 later packets arrive
    out of sequence, one NAK."""
    data = payload(60_000)
    r = run(data, SimNet(lose=lose_transmissions({2: {1}})))
    assert_verified(r, data)
    assert [idx(n.payload) for n in r.feedback(wire.OP_ACK, wire.SYNDROME_NAK_PSN_SEQUENCE)] == [2]
    assert r.qp.report()["counts"]["out_of_sequence"] == 57
    assert r.data_idx() == list(range(60)) + list(range(2, 60))


def test_a_lost_resend_is_found_by_the_timeout_not_by_another_nak() -> None:
    """Packet 3 lost twice: the NAK for PSN 3 is out and PSN 3 has not arrived since,
    so the receiver stays silent (one NAK per gap); the local ACK timeout goes back."""
    data = payload(10_000)
    r = run(data, SimNet(lose=lose_transmissions({3: {1, 2}})))
    assert_verified(r, data)
    assert r.data_idx() == list(range(10)) + list(range(3, 10)) + list(range(3, 10))
    assert [idx(n.payload) for n in r.feedback(wire.OP_ACK, wire.SYNDROME_NAK_PSN_SEQUENCE)] == [3]
    g = r.sender.report()["go_back_n"]
    assert (g["naks_received"], g["timeouts"], g["retries_most_in_row"]) == (1, 1, 2)


@pytest.mark.parametrize("retry_count", [7, 2, 0])
def test_retries_exhausted_put_the_qp_in_the_error_state(retry_count: int) -> None:
    """Every data packet is lost. The STATUS accepting the transfer arrives at 200 us,
    the 10 packets leave then, and the local ACK timer (50 ms) expires at
    200 us + k x 50 ms: the first retry_count expiries each go back to PSN 0 and resend
    all 10, the next one finds the retries used up."""
    data = payload(10_000)
    cfg = replace(FAST, retry_count=retry_count)
    r = run(data, SimNet(lose=lambda t, p, back: not back and p[0] in DATA_OPCODES), cfg)
    s = r.sender
    assert s.state == "error" and not s.ok
    assert s.error is not None and s.error.startswith("retry count exceeded")
    assert r.data_idx() == list(range(10)) * (1 + retry_count)
    start = 2 * ONE_WAY
    assert s.finished_at == pytest.approx(start + (retry_count + 1) * 0.05)
    rep = s.report()
    assert rep["state"] == "error" and rep["error"] == s.error and not rep["verified"]
    g = rep["go_back_n"]
    assert (g["timeouts"], g["retries"], g["retries_most_in_row"]) == (retry_count + 1, retry_count, retry_count)
    assert g["resent"] == 10 * retry_count
    assert rep["longest_stall_s"] == pytest.approx((retry_count + 1) * 0.05)
    assert rep["acked_bytes"] == 0 and r.qp.state == wire.STATE_ACCEPTED


def test_timeouts_resume_the_transfer_when_the_path_comes_back() -> None:
    """The path drops every data packet sent before 120 ms. Sent at 0.2 ms, resent at
    50.2 and 100.2 ms (lost), then at 150.2 ms (through): three timeouts, retries
    back to 0 once acknowledged, every byte placed."""
    data = payload(10_000)
    r = run(data, SimNet(lose=lambda t, p, back: not back and p[0] in DATA_OPCODES and t < 0.12))
    assert_verified(r, data)
    assert r.data_idx() == list(range(10)) * 4
    rep = r.sender.report()
    g = rep["go_back_n"]
    assert (g["timeouts"], g["retries_most_in_row"], g["resent"], g["naks_received"]) == (3, 3, 30, 0)
    assert r.sender.retries == 0
    # no progress from the first packet (0.2 ms) to the first ACK (150.2 + 0.2 ms)
    assert rep["longest_stall_s"] == pytest.approx(0.15 + 2 * ONE_WAY)
    # the acknowledged bytes stay at 0 until then: the stall shows in the series
    assert all(b == 0 for t, b in rep["delivered_series"] if t < 0.15)
    assert rep["delivered_series"][-1][1] == 10_000


def test_lost_acks_are_answered_again_from_the_duplicates() -> None:
    """Every ACK sent in the first 10 ms is lost: the sender times out at 50.2 ms and
    resends 0-9; the receiver, complete, counts them as duplicates and acknowledges
    those asking (3, 7, 9) with its last PSN."""
    data = payload(10_000)
    r = run(data, SimNet(lose=lambda t, p, back: back and p[0] == wire.OP_ACK and t < 0.01))
    assert_verified(r, data)
    assert r.data_idx() == list(range(10)) * 2
    assert r.qp.report()["counts"]["duplicates"] == 10
    later_acks = [idx(a.payload) for a in r.feedback(wire.OP_ACK, wire.SYNDROME_ACK) if a.t > 0.01]
    assert later_acks == [9, 9, 9]
    assert r.sender.report()["go_back_n"]["timeouts"] == 1


def test_ce_marks_make_at_most_one_cnp_per_interval_and_each_halves_the_rate() -> None:
    """Every data packet sent in the first 5 ms carries CE. The receiver sends a CNP on
    a marked arrival unless it sent one less than 2.5 ms before; with alpha at 1 and
    no timer or byte counter expiring (K = T = 100 s, B = 1 GB), each CNP sets
    RC = RC x (1 - 1/2) and leaves alpha at (1 - g) x 1 + g = 1."""
    cfg = replace(FAST, cc="dcqcn", window=8, dcqcn=DcqcnConfig(
        line_rate=8e6, min_rate=1e3, alpha_timer=100.0, increase_timer=100.0, byte_counter=10**9))
    data = payload(20_000)
    net = SimNet(ce=lambda t, ev: t < 0.005)
    r = run(data, net, cfg, RoceReceiverConfig(cnp_interval=0.0025))
    assert_verified(r, data)
    # the marked arrivals: data packets sent before 5 ms, one way later (no loss, no jitter)
    marked = [s.t + ONE_WAY for s in r.to_receiver if s.payload[0] in DATA_OPCODES and s.t < 0.005]
    expected, last = [], None
    for t in marked:
        if last is None or t - last >= 0.0025:
            expected.append(t)
            last = t
    cnps = r.feedback(wire.OP_CNP)
    assert [c.t for c in cnps] == pytest.approx(expected)
    assert len(cnps) >= 2
    assert r.qp.report()["counts"]["ce"] == len(marked)
    for c in cnps:  # opcode 0x81, BECN, the sender's QP, DSCP 48 with ECT(0)
        assert c.payload[4] & 0x40 and int.from_bytes(c.payload[5:8], "big") == r.sender.qp
        assert c.tclass == 48 << 2 | 0b10 and len(c.payload) == 28
    rep = r.sender.report()
    assert rep["cnps_received"] == len(cnps)
    assert rep["rate_bps"]["final"] == rep["rate_bps"]["min"] == 8e6 / 2 ** len(cnps)
    assert rep["dcqcn"]["alpha"] == 1.0


def test_cc_none_ignores_cnps_and_keeps_the_line_rate() -> None:
    cfg = replace(FAST, dcqcn=DcqcnConfig(line_rate=8e6, min_rate=1e3))
    data = payload(5_000)
    r = run(data, SimNet(ce=lambda t, ev: True), cfg, RoceReceiverConfig(cnp_interval=0.0))
    assert_verified(r, data)
    rep = r.sender.report()
    assert rep["cnps_received"] == 5 and rep["rate_bps"]["final"] == rep["rate_bps"]["min"] == 8e6
    assert rep["dcqcn"] is None


def test_pacing_spaces_the_packets_at_the_rate() -> None:
    """At 8 Mb/s a First packet of 1028 bytes (BTH, RETH, 1000 bytes) takes 1.028 ms and
    a Middle of 1012 bytes 1.012 ms: the send times follow from the sizes."""
    cfg = replace(FAST, burst=1, dcqcn=DcqcnConfig(line_rate=8e6, min_rate=1e3))
    r = run(payload(4_000), SimNet(), cfg)
    times = [s.t for s in r.to_receiver if s.payload[0] in DATA_OPCODES]
    start = 2 * ONE_WAY
    assert times == pytest.approx([start, start + 1.028e-3, start + 2.040e-3, start + 3.052e-3])


def test_a_receiver_of_the_other_transport_refuses_with_a_clear_reason() -> None:
    """An MRC-lite OPEN (version 1) to the baseline's receiver is refused, reason version."""
    rx = RoceReceiver()
    o = wire.Open(EV, wire.VERSION, 7, 0, 1000, 1000, 16, bytes(32))
    (tx,) = rx.on_packet(o.pack(), 0.0, "peer", EV)
    st = wire.Status.unpack(tx.payload)
    assert (st.state, st.reason) == (wire.STATE_REFUSED, wire.REFUSE_VERSION)
    assert "--transport" in wire.REFUSE_REASONS[st.reason]


class Bottleneck:
    """A port of 50 Mb/s on the data's way (FIFO; CE on a packet that finds more than
    8 queued, drop when 32 are queued: a lossy fabric's port without PFC, never
    trimming), 250 us each way; the answers go back unqueued. SimNet's ``carry``."""

    def __init__(self) -> None:
        self.departures: list[float] = []
        self.busy_until = 0.0
        self.dropped = self.marked = self.most = 0
        self.counts = {"reordered": 0}

    def carry(self, t: float, ev: int, payload: bytes, index: int, back: bool = False):
        if back or payload[0] not in DATA_OPCODES:
            return [(t + 250e-6, payload, 0b10)]
        self.departures = [d for d in self.departures if d > t]
        depth = len(self.departures)
        self.most = max(self.most, depth)
        if depth >= 32:
            self.dropped += 1
            return []
        tclass = 0b11 if depth > 8 else 0b10
        self.marked += tclass == 0b11
        self.busy_until = max(self.busy_until, t) + 8 * len(payload) / 50e6
        self.departures.append(self.busy_until)
        return [(self.busy_until + 250e-6, payload, tclass)]


def test_dcqcn_keeps_a_lossy_bottleneck_from_dropping_where_no_rate_control_collapses() -> None:
    """The defaults (line rate 100 Mb/s, twice the port's) into the port above: with
    DCQCN the marks' CNPs bring the rate under the port's before its queue reaches
    the drop threshold; without, every overflow costs a NAK and a go-back-N of the
    whole window, most of which the port drops again."""
    data = payload(500_000)
    out = {}
    for cc in ("dcqcn", "none"):
        net = Bottleneck()
        sender, receiver = RoceSender(data, EV, RoceSenderConfig(cc=cc)), RoceReceiver()
        drive(sender, receiver, net, {EV: 0}, limit=60)
        (qp,) = receiver.conns.values()
        assert sender.ok and bytes(qp.buf) == data
        out[cc] = (sender.report(), net)
    rep, net = out["dcqcn"]
    assert net.marked > 0 and rep["cnps_received"] > 0 and rep["rate_bps"]["min"] < 50e6
    assert net.dropped == 0 and net.most < 32
    assert rep["go_back_n"]["resent"] == 0 and rep["packets_sent"] == 500
    rep, net = out["none"]
    assert net.dropped > 0 and rep["rate_bps"]["min"] == 100e6
    assert rep["go_back_n"]["naks_received"] > 0 and rep["go_back_n"]["resent"] > 10 * 500


def test_a_qp_that_connects_late_says_so_apart_from_its_stalls() -> None:
    """The path drops everything before 120 ms, OPENs and data alike. The OPEN is sent
    at 0 and resent every local ACK timeout (50 ms): lost at 0, 50 and 100 ms,
    accepted at 150 ms + the round trip (200 us). From there no packet is lost, so no
    timeout and no stall: the wait shows in ``connect_s`` and ``open_sent``."""
    data = payload(10_000)
    r = run(data, SimNet(lose=lambda t, p, back: not back and t < 0.12))
    assert_verified(r, data)
    rep = r.sender.report()
    assert rep["connect_s"] == pytest.approx(0.15 + 2 * ONE_WAY)
    assert rep["control"]["open_sent"] == 4  # at 0, 50, 100 and 150 ms (the verdict comes unasked)
    assert rep["go_back_n"]["timeouts"] == 0 and rep["longest_stall_s"] < 0.01
    clean = run(data, SimNet()).sender.report()
    assert clean["connect_s"] == pytest.approx(2 * ONE_WAY) and clean["control"]["open_sent"] == 1
