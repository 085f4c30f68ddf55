"""The receiver's reordering window (endpoints/receiver.py, docs/transport.md
"Feedback") over the simulated network: paths whose delays differ by more than the
NACK delay.

Why: on a slow or loaded fabric (Python switches on shared cores, BMv2) the paths of
one transfer differ by several milliseconds; a fixed 5 ms NACK delay then NACKs
packets that are only late, and every such NACK costs a resend and retires a healthy
EV. The receiver learns the spread from NACKed packets that arrive in their first
transmission (BTH ``resent`` 0) and waits twice that before the next NACK.
"""

from __future__ import annotations

import random

from endpoints import wire
from endpoints.receiver import ReceiverConfig
from endpoints.transport import SenderConfig
from fabric.plan import nic_evs
from fabric.topology import from_parameters
from tests.endpoints.simnet import SimNet, run_transfer

MTU = 1000
PACKETS = 2000
SKEW = 1e-3  # EV number k of the 16 is k ms slower: the last is 15 ms behind the first


def evs16():
    topo = from_parameters(evs_per_nic=16)
    return nic_evs(topo, topo.host("h1"), topo.host("h3"))


def transfer(receiver_cfg: ReceiverConfig):
    data = random.Random(5).randbytes(PACKETS * MTU)
    run = run_transfer(data, evs16(), SimNet(path_skew=SKEW), receiver_cfg=receiver_cfg)
    assert run.sender.ok, run.sender.error
    assert run.conn.state == wire.STATE_VERIFIED and bytes(run.conn.buf) == data
    return run


def test_late_packets_widen_the_window_until_they_are_no_longer_nacked() -> None:
    run = transfer(ReceiverConfig())  # nack_delay 5 ms, grows up to 1 s
    rep, conn = run.sender.report(), run.conn.report()
    # Learned: at least one NACK was found spurious, and the window covers the 15 ms
    # spread (twice the lateness seen, so above 15 ms once a packet 7.5 ms late or more was NACKed).
    assert conn["counts"]["spurious_nacks"] >= 1
    assert 0.015 <= conn["nack_delay_s"] <= 1.0
    # Only the first NACKs, before the window grew, were spurious: under 5% resent,
    # fewer EVs retired than the set has, and every one GOOD again at the end.
    assert rep["retransmissions"]["total"] < PACKETS * 5 // 100, rep["retransmissions"]
    assert rep["retransmissions"]["timeout"] == 0
    assert rep["evs_retired"] < 16
    assert all(e["state"] == "good" for e in rep["per_ev"])


def test_a_fixed_window_nacks_the_late_packets_again_and_again() -> None:
    # The same network with the window held at 5 ms: the skew alone makes the spurious
    # NACKs (so the test above measures the learning, not a kind network).
    run = transfer(ReceiverConfig(nack_delay_max=0.005))
    rep, conn = run.sender.report(), run.conn.report()
    assert conn["nack_delay_s"] == 0.005
    assert rep["retransmissions"]["nack"] > PACKETS * 10 // 100, rep["retransmissions"]
    # Each of those packets arrives 15 ms late at most, breaking its EV's row of losses
    # long before a path's first loss is 50 ms old (retire_delay): no EV is retired.
    assert rep["control"]["ev_losses_taken_back"] > 0
    assert rep["evs_retired"] == 0


def nacks_per_psn(run) -> dict[int, int]:
    """How many loss NACKs named each PSN (a NACK names base_psn + every set bit)."""
    named: dict[int, int] = {}
    for s in run.to_sender:
        if s.payload[0] != wire.OP_ACK or s.payload[12] != wire.SYNDROME_NACK_LOSS:
            continue
        *_, base, bitmap = wire.ACK.unpack_from(s.payload)
        bits = wire.reverse64(bitmap)
        for i in range(64):
            if bits >> i & 1:
                psn = wire.psn_add(base, i)
                named[psn] = named.get(psn, 0) + 1
    return named


def test_a_hole_is_not_nacked_again_before_its_resend_can_arrive() -> None:
    """A slow fabric (100 ms one way) and a 300 ms reordering window: a lost packet is
    NACKed once, 300 ms after the hole opened, and its resend arrives 200 ms later. A
    second NACK within the window would only load the way back: none is sent. With
    the window held below the round trip (20 ms) the same hole is NACKed again every
    renack interval until the resend lands: the rule, not the network, saves the NACKs."""
    data = random.Random(6).randbytes(200 * MTU)
    lost_ev = evs16()[3].ev

    def once(nack_delay: float):
        # the first data packet on one EV (after OPEN and STATUS, 200 ms) is lost; nothing else is
        net = SimNet(base_delay=0.1, dead_fwd=lambda t, ev: ev == lost_ev and 0.15 < t < 0.25)
        run = run_transfer(data, evs16(), net, receiver_cfg=ReceiverConfig(nack_delay=nack_delay, nack_delay_max=nack_delay),
                           sender_cfg=SenderConfig(rto_min=2.0, rto_initial=2.0))  # the NACKs resend, not timeouts
        assert run.sender.ok, run.sender.error
        assert run.conn.state == wire.STATE_VERIFIED and bytes(run.conn.buf) == data
        assert net.counts["dead"] >= 1
        return run

    slow = once(0.3)
    named = nacks_per_psn(slow)
    assert named and set(named.values()) == {1}, named
    assert slow.sender.report()["retransmissions"]["timeout"] == 0
    # the control: a 20 ms window NACKs each hole about (200 ms / 20 ms) times
    fast = nacks_per_psn(once(0.02))
    assert set(fast) == set(named)
    assert min(fast.values()) >= 5, fast
