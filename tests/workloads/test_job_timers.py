"""A job's senders' RTO floor against the reordering window its receivers carry, over
the simulated network (tests/endpoints/simnet.py) with the real state machines.

Why: in a job the agents carry each connection's judgement to its next transfer: the
EVs found ASSUMED_BAD (sender side) and the reordering window learned (receiver side:
on a loaded machine tens of ms, a hole is NACKed only after it). A timeout blames no
EV, a loss NACK does. Were a dead path's packets resent on timeouts before their
NACKs come, the EV would never be retired, never carried, and every later transfer of
the job would lose its packets on it again and wait an RTO for them. The transfer here is one step of the measured ring
all-reduce after a spine cable was cut: 400 packets from h1 to h3 on the default
fabric, 7 of the 8 EVs through the cut cable carried ASSUMED_BAD from the transfer
before, the 8th still GOOD (its losses had been resent on timeouts), the receiver's
window 60 ms.
"""

from __future__ import annotations

import random

import pytest

from endpoints import wire
from endpoints.cli import topology_evs
from endpoints.transport import ASSUMED_BAD, GOOD, Receiver, ReceiverConfig, Sender, SenderConfig
from fabric.resolve import Shape, resolve
from tests.endpoints.simnet import SimNet, drive
from workloads.agent import CARRIED, sender_config
from workloads.runner import JobSpec
from workloads.transports import transport

# The EVs of h1's NIC towards h3 over plane 0, spine 0 (the cable p0-leaf0:p0-spine0):
# the plan numbers EVs 4096 + 8 k + 4 spine + plane (64 EVs, 8 per plane and spine).
THROUGH_CUT = {4096, 4104, 4112, 4120, 4128, 4136, 4144, 4152}
CARRIED_BAD = THROUGH_CUT - {4136}
STILL_GOOD = 4136
WINDOW = 0.060  # the receiver's reordering window, carried from the peer's earlier transfers
ONE_WAY = 0.005  # RTT 10 ms


def step_after_the_cut(rto_min: float) -> Sender:
    topo = resolve(None, Shape()).topology
    evs, _ = topology_evs(topo, "h1", "h3", None, None)
    assert {e.ev for e in evs if (e.plane, e.spine) == (0, 0)} == THROUGH_CUT and len(evs) == 64
    data = random.Random(7).randbytes(400 * 1000)
    sender = Sender(data, evs, sender_config(transport("mrc"), 1, rto_min), now=0.0)
    for ev in sorted(CARRIED_BAD):  # as the agent starts a transfer: the connection's judgement
        sender.ev_set.retire(ev, CARRIED, 0.0)
    receiver = Receiver(ReceiverConfig(nack_delay=WINDOW))
    net = SimNet(base_delay=ONE_WAY, dead_fwd=lambda t, ev: ev in THROUGH_CUT)
    drive(sender, receiver, net, {e.ev: 0 for e in evs})
    (conn,) = receiver.conns.values()
    assert sender.ok and conn.state == wire.STATE_VERIFIED and bytes(conn.buf) == data
    return sender


@pytest.mark.parametrize("rto_min", [JobSpec.rto_min, 0.2], ids=["jobs-floor", "200ms"])
def test_the_jobs_floor_leaves_the_nack_its_time(rto_min: float) -> None:
    # JobSpec's floor is the transport's own (50 ms), below the window plus the RTT
    # (60 ms + 10 ms); the retransmission timer restarts on every acknowledgement of
    # new data (docs/transport.md), and the other EVs' packets are acknowledged all
    # along, so no timeout fires before the dead EV's first two losses are NACKed: the
    # NACKs retire it, nothing is resent on a timeout and no other EV is touched; the
    # same under a 200 ms floor.
    assert JobSpec.rto_min == SenderConfig.rto_min
    s = step_after_the_cut(rto_min)
    assert [(e["ev"], e["event"], e["cause"]) for e in s.events if e["cause"] != CARRIED] == [
        (STILL_GOOD, "retired", "nack")]
    assert s.evs[STILL_GOOD].state == ASSUMED_BAD
    assert s.counts["retransmit_timeout"] == 0
    assert all(st.state == GOOD for ev, st in s.evs.items() if ev not in THROUGH_CUT)
