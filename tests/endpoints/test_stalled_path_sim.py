"""A path that stalls is not a path that died (endpoints/path_blame.py; docs/transport.md,
"What retires an EV"), over the simulated network.

Why: on the Mininet fabric a software switch that waits for a CPU holds every packet
of the EVs that cross it, in order, for tens of milliseconds, and then delivers them.
The receiver NACKs them once they are later than its 5 ms reordering window; when two
packets in a row of an EV were NACKed before the first arrived, the EV was retired,
and the LATE ACK of the first restored it a few milliseconds later: a healthy EV
retired. Now a path's losses retire its EVs only once the first of them is
``retire_delay`` (50 ms) old with nothing sent on those EVs since acknowledged: a
stall shorter than that delivers first, a dead path does not.

The network is the failure experiment's (experiments/failure.py): h1 -> h3 on the
fabric of 4 planes x 2 spines, 64 EVs, 8 on each (plane, spine) path, at 4,000
packets/s: each EV carries a packet every 16 ms, each path one every 2 ms.
"""

from __future__ import annotations

import random

from fabric.plan import nic_evs
from fabric.topology import from_parameters
from endpoints.transport import ASSUMED_BAD, SenderConfig
from tests.endpoints.simnet import SimNet, run_transfer

MTU = 1000
TOPO = from_parameters(planes=4, spines=2, leaves=2, hosts_per_leaf=2, evs_per_nic=64)
EVS = nic_evs(TOPO, TOPO.host("h1"), TOPO.host("h3"))
PATH = {e.ev for e in EVS if (e.plane, e.spine) == (3, 1)}  # the path that stalls or dies
AT = 0.200  # when it starts
RATE = 4000.0


def payload() -> bytes:
    return random.Random(11).randbytes(2400 * MTU)  # 0.6 s at 4,000 packets/s


def stalled(for_s: float) -> SimNet:
    """PATH's switch stops at AT for ``for_s`` seconds: what is sent on it meanwhile goes
    on when it runs again, in order."""
    return SimNet(seed=1, held_fwd=lambda t, ev: AT + for_s if ev in PATH and AT <= t < AT + for_s else t)


def test_the_network_is_the_failure_experiments() -> None:
    assert len(EVS) == 64 and len(PATH) == 8


def test_a_path_stalled_for_40_ms_retires_nothing_and_its_nacks_are_taken_back() -> None:
    data = payload()
    run = run_transfer(data, EVS, stalled(0.040), sender_cfg=SenderConfig(rate_pps=RATE))
    assert run.sender.ok and bytes(run.conn.buf) == data
    # The path's packets sent in the stall's first 35 ms (one every 2 ms) were older than
    # the 5 ms window before it ended, and two of them in a row on an EV used to retire
    # it; the first of them was 40 ms old at most when their ACKs came: no EV retired.
    assert run.sender.events == []
    # Those 17 or 18 were NACKed, each found spurious when its packet arrived at 0.240 s,
    # and each of their EVs' loss taken back by a LATE ACK.
    conn = run.conn.report()
    assert 17 <= conn["counts"]["spurious_nacks"] <= 18, conn["counts"]
    assert run.sender.report()["control"]["ev_losses_taken_back"] == conn["counts"]["spurious_nacks"]
    # Without the wait (retire_delay 0) the same stall retires the path's 8 EVs, which
    # come back only once the switch runs again: what the wait spares.
    now = run_transfer(data, EVS, stalled(0.040), sender_cfg=SenderConfig(rate_pps=RATE, retire_delay=0))
    assert {e["ev"] for e in now.sender.events if e["event"] == "retired"} == PATH
    assert all(e["t"] >= AT + 0.040 for e in now.sender.events if e["event"] != "retired")


def test_a_dead_path_is_retired_whole_50_ms_after_its_first_loss() -> None:
    data = payload()
    net = SimNet(seed=1, dead_fwd=lambda t, ev: ev in PATH and t >= AT)
    run = run_transfer(data, EVS, net, sender_cfg=SenderConfig(rate_pps=RATE))
    assert run.sender.ok and bytes(run.conn.buf) == data
    retired = [e for e in run.sender.events if e["event"] == "retired"]
    # Exactly the path's 8 EVs, at one moment: its first lost packet is the first sent
    # on it from AT on (within 2 ms), and the path is condemned 50 ms after it left.
    assert {e["ev"] for e in retired} == PATH and len(retired) == 8
    assert len({e["t"] for e in retired}) == 1
    assert AT + 0.050 <= retired[0]["t"] < AT + 0.052
    assert all(run.sender.evs[ev].state == ASSUMED_BAD for ev in PATH)
