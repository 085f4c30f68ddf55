"""The retransmission timeout (endpoints/retransmit.py): RFC 6298's estimator and
timer, one packet per timeout with the RTO doubled, the timer restarted by every
acknowledgement of new data; the estimator alone, then the real state machines over
the simulated network.

Why: when every answer stops for a while (a feedback outage; on a slow target, a
stall) all the packets in flight pass the RTO together, and resending them all would
double the load that delayed them: TCP resends the oldest only and backs off (RFC 6298
5.4-5.6), and so does the sender. And while answers come, a packet that is only late
behind them is no reason for a timeout: the timer waits for one RTO of silence.
"""

from __future__ import annotations

import random

import pytest

from endpoints import wire
from endpoints.retransmit import RttEstimator
from endpoints.transport import ReceiverConfig, SenderConfig
from fabric.plan import nic_evs
from fabric.topology import from_parameters
from tests.endpoints.simnet import Run, SimNet, run_transfer


def _rfc6298(samples: list[float], g: float, extra: float) -> tuple[float, float, float]:
    """srtt, rttvar and the unbounded RTO after ``samples``, from RFC 6298 2.2-2.3
    (alpha 1/8, beta 1/4; rttvar updated with the srtt before the sample)."""
    srtt, rttvar = samples[0], samples[0] / 2
    for r in samples[1:]:
        rttvar = (1 - 1 / 4) * rttvar + 1 / 4 * abs(srtt - r)
        srtt = (1 - 1 / 8) * srtt + 1 / 8 * r
    return srtt, rttvar, srtt + max(g, 4 * rttvar) + extra


def test_the_rto_is_rfc_6298s_plus_the_receivers_ack_delay() -> None:
    est = RttEstimator(rto_initial=1.0, rto_min=0.001, rto_max=60.0, ack_delay=0.001, granularity=0.001)
    assert est.rto == 1.0 and est.srtt is None  # RFC 6298 2.1: 1 s before any sample
    est.sample(0.100)
    # 2.2: srtt 0.1, rttvar 0.05, RTO 0.1 + 4 x 0.05 = 0.3, plus the ACK delay 0.001
    assert est.srtt == pytest.approx(0.100) and est.rttvar == pytest.approx(0.050)
    assert est.rto == pytest.approx(0.301)
    est.sample(0.120)
    # 2.3: rttvar 3/4 x 0.05 + 1/4 x |0.1 - 0.12| = 0.0425; srtt 7/8 x 0.1 + 1/8 x 0.12 = 0.1025;
    # RTO 0.1025 + 0.17 + 0.001 = 0.2735
    assert est.rttvar == pytest.approx(0.0425) and est.srtt == pytest.approx(0.1025)
    assert est.rto == pytest.approx(0.2735)
    est.sample(0.080)
    # rttvar 3/4 x 0.0425 + 1/4 x |0.1025 - 0.08| = 0.031875 + 0.005625 = 0.0375;
    # srtt 7/8 x 0.1025 + 1/8 x 0.08 = 0.0996875; RTO 0.0996875 + 0.15 + 0.001 = 0.2506875
    assert est.rttvar == pytest.approx(0.0375) and est.srtt == pytest.approx(0.0996875)
    assert est.rto == pytest.approx(0.2506875)
    samples = [0.100, 0.120, 0.080, 0.300, 0.050, 0.050]
    for r in samples[3:]:
        est.sample(r)
    srtt, rttvar, rto = _rfc6298(samples, 0.001, 0.001)
    assert (est.srtt, est.rttvar, est.rto) == pytest.approx((srtt, rttvar, rto))


def test_the_clock_granularity_and_the_bounds() -> None:
    # A steady RTT: rttvar halves the first sample and then shrinks by 3/4 a sample,
    # 0.005 x 0.75^39 after 40 samples of 10 ms: 4 rttvar is under G = 1 ms, so the RTO
    # is srtt + G + ACK delay = 10 + 1 + 1 ms.
    est = RttEstimator(rto_initial=1.0, rto_min=0.001, rto_max=60.0, ack_delay=0.001, granularity=0.001)
    for _ in range(40):
        est.sample(0.010)
    assert 4 * est.rttvar == pytest.approx(4 * 0.005 * 0.75 ** 39)
    assert est.rto == pytest.approx(0.012)
    # The same with a floor of 50 ms and a ceiling of 1 s: the floor, then 1 s for 2 s samples
    est = RttEstimator(rto_initial=5.0, rto_min=0.05, rto_max=1.0)
    assert est.rto == 1.0  # the initial RTO within the bounds too
    for _ in range(40):
        est.sample(0.010)
    assert est.rto == 0.05
    est.sample(2.0)
    assert est.rto == 1.0


def test_a_timeout_doubles_the_rto_until_the_next_sample() -> None:
    est = RttEstimator(rto_initial=1.0, rto_min=0.05, rto_max=1.0, ack_delay=0.001, granularity=0.001)
    for _ in range(40):
        est.sample(0.004)
    assert est.rto == 0.05  # 4 + 1 + 1 ms: the floor
    rtos = []
    for _ in range(6):
        est.back_off()
        rtos.append(est.rto)
    assert rtos == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0] and est.backoffs == 6  # doubled, up to the ceiling
    est.sample(0.004)  # a packet sent once is acknowledged: the estimator's RTO again
    assert est.rto == 0.05 and est.backoffs == 0


OUTAGE = (0.002, 0.302)  # seconds: no packet the receiver sends in this time arrives


def _resends(run: Run) -> list[tuple[float, int]]:
    """(time sent, packet index) of every data packet that left marked RESENT."""
    out = []
    for p in run.to_receiver:
        if p.payload[0] == wire.OP_WRITE:
            word = wire.DATA.unpack_from(p.payload)[4]
            if word & wire.RESENT:
                out.append((p.t, ((word & wire.PSN_MASK) - run.sender.first_psn) & wire.PSN_MASK))
    return out


def _last_answer_before(run: Run, t: float) -> float:
    """When the last packet from the receiver reached the sender before ``t``."""
    return max(p.t for p in run.delivered_to_sender if p.t < t)


def test_a_feedback_outage_costs_one_resend_per_doubled_timeout() -> None:
    """The answers stop at 2 ms with a full window in flight (RTT 0.2 ms: the RTO is
    its floor, 50 ms). The timer expires 50 ms after the last answer L: one resend
    (the oldest packet), the RTO doubles and the timer restarts: L + 150 ms, resend,
    L + 350 ms, resend. The first two are answered inside the outage (lost), the
    third after it: 3 timeouts at L + 50, 150 and 350 ms, one packet each; the
    cumulative ACK then answers the rest. None retires an EV. (Per-packet timers, each
    judged from its own send time, resend at t0 + 50, 100, 200 and 400 ms: 4.)"""
    topo = from_parameters(evs_per_nic=16)
    evs = nic_evs(topo, topo.host("h1"), topo.host("h3"))
    data = random.Random(3).randbytes(2000 * 1000)
    net = SimNet(dead_back=lambda t, ev: OUTAGE[0] <= t < OUTAGE[1])
    run = run_transfer(data, evs, net, sender_cfg=SenderConfig(rto_min=0.05))
    rep = run.sender.report()
    assert run.sender.ok and run.conn.state == wire.STATE_VERIFIED and bytes(run.conn.buf) == data
    last = _last_answer_before(run, OUTAGE[1])
    assert last < OUTAGE[0] + 0.001
    times = [t for t, _ in _resends(run)]
    assert times == pytest.approx([last + 0.05, last + 0.15, last + 0.35], abs=1e-9), (last, times)
    assert rep["retransmissions"]["timeout"] == 3, rep["retransmissions"]
    assert rep["retransmissions"]["total"] == 3
    assert rep["evs_retired"] == 0


class StalledNet(SimNet):
    """A switch process that waits for the CPU: every packet sent (either way) during
    ``stall`` is held and arrives just after it ends; nothing is lost."""

    def __init__(self, stall: tuple[float, float]) -> None:
        super().__init__()
        self.stall = stall

    def carry(self, t: float, ev: int, payload: bytes, index: int, back: bool = False
              ) -> list[tuple[float, bytes, int]]:
        out = super().carry(t, ev, payload, index, back)
        if self.stall[0] <= t < self.stall[1]:
            return [(self.stall[1] + self.base_delay, body, tclass) for _, body, tclass in out]
        return out


@pytest.mark.parametrize("stall, rto_min, timeouts", [(0.040, 0.05, 0), (0.120, 0.05, 1), (0.120, 0.2, 0)],
                         ids=["40ms-stall-50ms-floor", "120ms-stall-50ms-floor", "120ms-stall-200ms-floor"])
def test_a_stall_shorter_than_the_rto_resends_nothing(stall: float, rto_min: float, timeouts: int) -> None:
    """Every packet sent from 2 ms for ``stall`` seconds (data and answers) is held to
    the stall's end; nothing is lost. The RTT before it is 0.2 ms, so the RTO is its
    floor. A stall of 40 ms under a 50 ms RTO: nothing resent. One of 120 ms: the
    timer expires 50 ms after the last answer L (about 2 ms), one packet only late is
    resent and arrives twice; the next timeout would be at L + 150 ms, after the held
    answers (122 ms) restarted it. Under a 200 ms floor: nothing. The resend leaves one
    RTO after the later of L and the packet's own send time (the timer was off when
    every packet before it was answered, RFC 6298 5.1-5.2)."""
    topo = from_parameters(evs_per_nic=16)
    evs = nic_evs(topo, topo.host("h1"), topo.host("h3"))
    data = random.Random(4).randbytes(2000 * 1000)
    run = run_transfer(data, evs, StalledNet((0.002, 0.002 + stall)), sender_cfg=SenderConfig(rto_min=rto_min))
    rep = run.sender.report()
    assert run.sender.ok and bytes(run.conn.buf) == data
    assert rep["retransmissions"]["timeout"] == timeouts, rep["retransmissions"]
    assert rep["retransmissions"]["total"] == timeouts
    assert run.conn.counts["duplicates"] == timeouts
    if timeouts:
        ((t, idx),) = _resends(run)
        first = min(p.t for p in run.to_receiver if p.payload[0] == wire.OP_WRITE
                    and wire.DATA.unpack_from(p.payload)[4] & wire.PSN_MASK == (run.sender.first_psn + idx) & wire.PSN_MASK)
        assert t == pytest.approx(max(first, _last_answer_before(run, 0.002)) + 0.05, abs=1e-9)


LATE_PSN_INDEX = 100  # the packet held back
RATE = 1000.0  # packets/s: one answer about every millisecond (the receiver's ACK delay)


class OneLatePacket(SimNet):
    """The first transmission of packet ``LATE_PSN_INDEX`` takes ``late`` seconds more
    on its way; every other packet 0.1 ms."""

    def __init__(self, first_psn: int, late: float, lost: bool = False) -> None:
        super().__init__()
        self.psn = (first_psn + LATE_PSN_INDEX) & wire.PSN_MASK
        self.late = late
        self.lost = lost

    def carry(self, t: float, ev: int, payload: bytes, index: int, back: bool = False
              ) -> list[tuple[float, bytes, int]]:
        out = super().carry(t, ev, payload, index, back)
        if not back and payload[0] == wire.OP_WRITE:
            word = wire.DATA.unpack_from(payload)[4]
            if word & wire.PSN_MASK == self.psn and not word & wire.RESENT:
                return [] if self.lost else [(at + self.late, body, tc) for at, body, tc in out]
        return out


def _one_late_packet(late: float, lost: bool = False) -> Run:
    topo = from_parameters(evs_per_nic=16)
    evs = nic_evs(topo, topo.host("h1"), topo.host("h3"))
    data = random.Random(5).randbytes(400 * 1000)
    cfg = SenderConfig(rto_min=0.05, rate_pps=RATE, first_psn=1000)
    # the receiver NACKs no hole younger than 0.3 s: what is resent here is the timer's
    run = run_transfer(data, evs, OneLatePacket(1000, late, lost), sender_cfg=cfg,
                       receiver_cfg=ReceiverConfig(nack_delay=0.3))
    assert run.sender.ok and bytes(run.conn.buf) == data
    return run


def test_a_packet_late_behind_acknowledged_ones_is_not_resent() -> None:
    """400 packets paced at 1,000/s (the window, 128 packets, lasts 128 ms); packet
    100 arrives 80 ms late, more than the 50 ms RTO. The packets after it are
    acknowledged about every millisecond (SACK), each acknowledgement restarting the
    timer: no timeout, nothing resent, no duplicate. (A timer run from each packet's
    own send time resends it 50 ms after it left.)"""
    run = _one_late_packet(0.080)
    rep = run.sender.report()
    assert rep["retransmissions"]["total"] == 0, rep["retransmissions"]
    assert run.conn.counts["duplicates"] == 0


def test_a_lost_packet_no_nack_reports_is_resent_one_rto_after_the_last_answer() -> None:
    """The same packet lost, and no NACK (the receiver's reordering window is 0.3 s):
    new packets go on until the window of 128 packets past it is sent (packet 227, at
    about 100 + 128 ms), answered at once; then nothing comes back, and the timer
    expires one RTO (the 50 ms floor: the RTT is 0.2-1.2 ms) after the last answer L:
    packet 100 alone is resent at L + 50 ms."""
    run = _one_late_packet(0.0, lost=True)
    rep = run.sender.report()
    (resend,) = _resends(run)
    assert resend[1] == LATE_PSN_INDEX
    last = _last_answer_before(run, resend[0])
    assert resend[0] == pytest.approx(last + 0.05, abs=1e-9)
    assert 0.1 + 0.127 < last < 0.1 + 0.135  # the window past packet 100 was sent, and answered
    assert rep["retransmissions"] == {"total": 1, "timeout": 1, "nack": 0, "trim_nack": 0}


@pytest.mark.parametrize("value", [-0.001, float("inf"), float("nan")])
def test_a_bad_ack_delay_is_refused_by_name(value: float) -> None:
    with pytest.raises(ValueError, match="^sender: ack_delay"):
        SenderConfig(ack_delay=value).check()
