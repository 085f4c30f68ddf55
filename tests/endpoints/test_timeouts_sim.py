"""Retransmission timeouts over the simulated network (endpoints/retransmit.py): one
packet per timeout, the RTO doubled each time.

Why: when every answer stops for a while (a feedback outage here; on a slow target,
an RTT that jumps) all the packets in flight pass the RTO together; resending them
all would double the load that delayed them. TCP resends the oldest only and backs
off (RFC 6298 5.4); so does the sender.
"""

from __future__ import annotations

import random

import pytest

from endpoints import wire
from endpoints.transport import SenderConfig
from fabric.plan import nic_evs
from fabric.topology import from_parameters
from tests.endpoints.simnet import SimNet, run_transfer

OUTAGE = (0.002, 0.302)  # seconds: no packet from the receiver arrives in this time


def test_a_feedback_outage_costs_one_resend_per_doubled_timeout() -> None:
    topo = from_parameters(evs_per_nic=16)
    evs = nic_evs(topo, topo.host("h1"), topo.host("h3"))
    data = random.Random(3).randbytes(2000 * 1000)
    net = SimNet(dead_back=lambda t, ev: OUTAGE[0] <= t < OUTAGE[1])
    run = run_transfer(data, evs, net, sender_cfg=SenderConfig(rto_min=0.05))
    rep = run.sender.report()
    assert run.sender.ok and run.conn.state == wire.STATE_VERIFIED and bytes(run.conn.buf) == data
    # The window is full (16 packets or more in flight) when the answers stop, all
    # sent at about t0 = 2 ms. The RTO (rto_min, 50 ms, given, here: the RTT is 0.2 ms)
    # doubles on each timeout, and the packets sent at t0 are judged against it: the
    # timeouts fire at t0 + 50, 100 and 200 ms (inside the outage: their answers are
    # lost) and t0 + 400 ms (after it: answered). 4 timeouts, one resend each; the
    # other packets are answered by the cumulative ACK then. None retires an EV.
    assert rep["retransmissions"]["timeout"] == 4, rep["retransmissions"]
    assert rep["retransmissions"]["total"] == rep["retransmissions"]["timeout"]
    assert rep["evs_retired"] == 0


STALL = (0.002, 0.152)  # seconds: everything sent in this time arrives only at its end


class StalledNet(SimNet):
    """A switch process that waits 150 ms for the CPU: every packet sent (either way)
    during ``STALL`` is held and arrives just after it ends; nothing is lost."""

    def carry(self, t: float, ev: int, payload: bytes, index: int, back: bool = False
              ) -> list[tuple[float, bytes, int]]:
        out = super().carry(t, ev, payload, index, back)
        if STALL[0] <= t < STALL[1]:
            return [(STALL[1] + self.base_delay, body, tclass) for _, body, tclass in out]
        return out


@pytest.mark.parametrize("rto_min, timeouts", [(None, 0), (0.05, 2)], ids=["default-200ms", "50ms"])
def test_a_150_ms_stall_is_no_timeout_with_the_default_floor(rto_min: float | None, timeouts: int) -> None:
    """A stall of 150 ms (a software target waiting for the CPU) delays the window's
    packets and their ACKs; nothing is lost. The RTT before it is 0.2 ms, so the RTO
    is its floor: the default 200 ms outlasts the stall and nothing is resent; a floor
    of 50 ms fires twice for the packets sent at t0 = 2 ms (at t0 + 50 ms and, doubled,
    t0 + 100 ms; the next, t0 + 200 ms, comes after the answers), each resending a
    packet that was only late and so arrives twice."""
    topo = from_parameters(evs_per_nic=16)
    evs = nic_evs(topo, topo.host("h1"), topo.host("h3"))
    data = random.Random(4).randbytes(2000 * 1000)
    cfg = SenderConfig() if rto_min is None else SenderConfig(rto_min=rto_min)
    assert cfg.rto_min == (0.2 if rto_min is None else rto_min)
    run = run_transfer(data, evs, StalledNet(), sender_cfg=cfg)
    rep = run.sender.report()
    assert run.sender.ok and bytes(run.conn.buf) == data
    assert rep["retransmissions"]["timeout"] == timeouts, rep["retransmissions"]
    assert rep["retransmissions"]["total"] == timeouts
    assert run.conn.counts["duplicates"] == timeouts
