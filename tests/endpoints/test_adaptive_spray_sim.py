"""Adaptive spraying over the simulated network: an EV whose path marks CE is avoided,
then used again once the marks stop; ``spray="rr"`` keeps plain round robin.

Expected counts are derived from the policy's parameters (docs/transport.md,
"Adaptive spraying"): an avoided EV is still taken once every ``adapt_max_skip`` + 1
of its turns, and a score of 1 falls under 1/2 after one half-life.
"""

from __future__ import annotations

import random

from fabric.plan import nic_evs
from fabric.topology import from_parameters
from endpoints import wire
from endpoints.transport import SenderConfig
from tests.endpoints.simnet import SimNet, run_transfer

MTU = 1000
TOPO = from_parameters(evs_per_nic=16)
EVS = nic_evs(TOPO, TOPO.host("h1"), TOPO.host("h3"))
HOT = EVS[5].ev  # the EV whose packets the network marks
# The EVs sharing its path (plane, spine): the sender scores paths, not EV numbers.
PATH = [e.ev for e in EVS if (e.plane, e.spine) == (EVS[5].plane, EVS[5].spine)]


def payload(n: int) -> bytes:
    return random.Random(3).randbytes(n)


def sent_on(run, ev: int, since: float = 0.0, until: float = float("inf")) -> int:
    return sum(1 for p in run.to_receiver if p.payload[0] == wire.OP_WRITE and p.ev == ev and since <= p.t < until)


def marked_run(spray: str, until: float = float("inf"), n: int = 3200):
    data = payload(n * MTU)
    net = SimNet(seed=1, ce=lambda t, ev: ev == HOT and t < until)
    cfg = SenderConfig(rate_pps=100_000, spray=spray)  # 3,200 packets: 32 ms; RTT 0.2 ms
    run = run_transfer(data, EVS, net, sender_cfg=cfg)
    assert run.sender.ok and bytes(run.conn.buf) == data
    return run, net


def test_round_robin_sends_an_equal_share_on_a_marking_path() -> None:
    run, net = marked_run("rr")
    assert sent_on(run, HOT) == 3200 // 16 == 200
    assert net.counts["ce"] == 200 and run.conn.counts["ce"] == 200
    rep = run.sender.report()
    # Every CE-marked arrival is answered at once with an ACK echoing CE and the EV.
    assert rep["control"]["ce_echoes"] == 200
    assert {e["ev"]: e["ce"] for e in rep["per_ev"]}[HOT] == 200
    assert rep["spray"] == "rr" and rep["control"]["adaptive_skips"] == 0


def test_the_plan_puts_two_evs_on_each_path() -> None:
    # 16 EVs over 4 planes x 2 spines: EV k and EV k + 8 share plane k mod 4, spine (k // 4) mod 2.
    assert PATH == [EVS[5].ev, EVS[13].ev]


def test_adaptive_avoids_a_marking_path_but_never_starves_it() -> None:
    run, net = marked_run("adaptive")
    hot = [sent_on(run, ev) for ev in PATH]
    # Each EV of the path is taken once every adapt_max_skip + 1 = 17 of its turns (200
    # turns: 11.8), plus the packets sent before the first echo came back (one RTT, 20
    # packets: 1-2 on each).
    assert all(200 // 17 <= n <= 200 // 17 + 3 for n in hot), hot
    assert sum(hot) <= 2 * 200 // 2  # the acceptance: at most half round robin's share
    assert net.counts["ce"] == hot[0]  # every packet on the marking EV was marked, and
    assert run.sender.report()["control"]["ce_echoes"] == hot[0]  # echoed
    # The other 14 EVs share the rest evenly.
    others = [sent_on(run, e.ev) for e in EVS if e.ev not in PATH]
    assert sum(others) == 3200 - sum(hot) and max(others) - min(others) <= 1


def test_an_ev_whose_marks_stop_gets_its_share_back() -> None:
    """Marks for the first 10 ms only: the score is capped at 2, so two half-lives
    (40 ms) after the last mark it is under 1/2 and the EV is back in the rotation."""
    run, _ = marked_run("adaptive", until=0.010, n=9600)  # 96 ms of data
    t0 = min(p.t for p in run.to_receiver if p.payload[0] == wire.OP_WRITE)
    back = t0 + 0.010 + 0.040 + 0.001  # the last echo came 0.2 ms after the last marked packet
    total_after = sum(sent_on(run, e.ev, back) for e in EVS)
    assert total_after > 1000
    for ev in PATH:
        assert sent_on(run, ev, t0, t0 + 0.010) <= 1000 // 16 // 17 + 3  # 62 turns in 10 ms: avoided
        assert abs(sent_on(run, ev, back) - total_after / 16) <= 1  # its even share again
