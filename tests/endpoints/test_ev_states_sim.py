"""EV states over the simulated network: only the failed path is ever blamed.

The network is the one a cable cut makes: the sender's EVs whose own path crosses
the cable lose their data (sender -> receiver), and the receiver's EVs whose path
crosses it lose their feedback (receiver -> sender). The receiver maps EV numbers
to its own paths (fabric.plan.nic_evs of the receiving host), so the two sets
differ; the expected sets are written out below from that plan.
"""

from __future__ import annotations

import random

import pytest

from fabric.plan import EvPath, nic_evs
from fabric.topology import from_parameters
from endpoints import wire
from endpoints.transport import ASSUMED_BAD, GOOD, SenderConfig
from tests.endpoints.simnet import SimNet, run_transfer

MTU = 1000
# 2 planes x 4 spines, 10 EVs: h1 (leaf 0) -> h3 (leaf 1). The plan gives h1's EV k
# plane k mod 2, spine (k // 2) mod 4; h3's NIC starts 2 spines further (its offset).
TOPO = from_parameters(planes=2, spines=4, leaves=2, hosts_per_leaf=2, evs_per_nic=10)
EVS = nic_evs(TOPO, TOPO.host("h1"), TOPO.host("h3"))
# Cable p0-leaf0:p0-spine0 cut: forward, h1's EVs on plane 0 spine 0; back (leaf 1 ->
# spine 0 -> leaf 0), h3's EVs on plane 0 spine 0.
FORWARD_DEAD = {0x1000, 0x1008}
BACK_DEAD = {0x1004}


def payload(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def test_the_plan_gives_the_paths_this_file_expects() -> None:
    back = nic_evs(TOPO, TOPO.host("h3"), TOPO.host("h1"))
    assert [(e.ev, e.plane, e.spine) for e in EVS] == [
        (0x1000, 0, 0), (0x1001, 1, 0), (0x1002, 0, 1), (0x1003, 1, 1), (0x1004, 0, 2),
        (0x1005, 1, 2), (0x1006, 0, 3), (0x1007, 1, 3), (0x1008, 0, 0), (0x1009, 1, 0)]
    assert {e.ev for e in back if (e.plane, e.spine) == (0, 0)} == BACK_DEAD


def cut_run(down: float, up: float, seed: int = 1, **cfg: object):
    data = payload(4000 * MTU, seed)
    net = SimNet(seed=seed, jitter=100e-6,
                 dead_fwd=lambda t, ev: ev in FORWARD_DEAD and down <= t < up,
                 dead_back=lambda t, ev: ev in BACK_DEAD and down <= t < up)
    # 80 ms; a network ten times faster than the Mininet fabric: probes every 5 ms, and a
    # path's losses retire its EVs 5 ms after the first (retire_delay)
    config = SenderConfig(rate_pps=50_000, probe_interval=0.005, ev_min_active=4, seed=seed,
                          **{"retire_delay": 0.005, **cfg})
    run = run_transfer(data, EVS, net, sender_cfg=config)
    return data, net, run


def test_a_cut_cable_retires_exactly_the_evs_whose_data_crosses_it() -> None:
    down, up = 0.010, 0.050
    data, net, run = cut_run(down, up)
    s = run.sender
    assert s.ok, s.error
    assert bytes(run.conn.buf) == data
    assert net.counts["dead"] > 20  # data and feedback died both ways
    events = s.events
    # 0x1004's ACKs died on the way back, its data never: it is never blamed.
    assert {e["ev"] for e in events} == FORWARD_DEAD
    for ev in FORWARD_DEAD:
        mine = [e for e in events if e["ev"] == ev]
        assert [(e["event"], e["state"], e["cause"]) for e in mine] == [
            ("retired", ASSUMED_BAD, "nack"), ("recovered", GOOD, "probe")], mine
        retired, recovered = mine
        assert down < retired["t"] < up  # retired while the cable is down
        # Back only after the cable is: the first probe sent after `up` (one probe
        # interval, 5 ms, at most) and its round trip (0.2 ms, plus jitter).
        assert up < recovered["t"] < up + 0.005 + 0.001
        assert s.evs[ev].state == GOOD
    assert s.report()["evs_retired"] == 2 and s.report()["evs_recovered"] == 2


def test_every_state_change_is_an_event_naming_time_ev_plane_path_and_cause() -> None:
    data = payload(4000 * MTU)
    net = SimNet(seed=2, dead_fwd=lambda t, ev: ev == 0x1002 and t >= 0.01)
    names = {0x1002: "p0-leaf0 > p0-spine1 > p0-leaf1"}
    run = run_transfer(data, EVS, net, sender_cfg=SenderConfig(rate_pps=50_000, ev_min_active=4),
                       path_names=names)
    assert run.sender.ok
    (e,) = run.sender.events
    assert set(e) == {"t", "ev", "plane", "spine", "path", "event", "state", "cause"}
    assert (e["ev"], e["plane"], e["spine"], e["path"], e["event"], e["state"], e["cause"]) == (
        0x1002, 0, 1, "p0-leaf0 > p0-spine1 > p0-leaf1", "retired", ASSUMED_BAD, "nack")
    # Its first lost packet is the first sent on it from 0.01 on (every 0.2 ms: 10 EVs at
    # 50,000 packets/s); its path is condemned retire_delay (50 ms) after that packet left.
    assert 0.06 <= e["t"] < 0.0602
    # Without names, the path is told by plane and spine.
    plain = run_transfer(data, EVS, SimNet(seed=2, dead_fwd=lambda t, ev: ev == 0x1002 and t >= 0.01),
                         sender_cfg=SenderConfig(rate_pps=50_000, ev_min_active=4))
    assert [x["path"] for x in plain.sender.events] == ["plane 0 spine 1"]


def test_lost_feedback_alone_retires_nothing() -> None:
    """Every packet back is lost for 30 ms: the sender times out and resends, and
    blames no EV (a timeout cannot tell dead data from dead feedback)."""
    data = payload(3000 * MTU)
    net = SimNet(seed=3, dead_back=lambda t, ev: 0.010 <= t < 0.040)
    run = run_transfer(data, EVS, net, sender_cfg=SenderConfig(rate_pps=50_000, ev_min_active=4))
    assert run.sender.ok and bytes(run.conn.buf) == data
    rep = run.sender.report()
    assert rep["retransmissions"]["timeout"] > 0
    assert rep["evs_retired"] == 0 and run.sender.events == []


def test_a_slow_first_round_trip_retires_nothing() -> None:
    """A first RTT of 160 ms, beyond an initial RTO of 100 ms: timeouts at start-up,
    no EV retired."""
    data = payload(200 * MTU)
    cfg = SenderConfig(ev_min_active=4, rto_initial=0.1, rto_min=0.1)
    run = run_transfer(data, EVS, SimNet(seed=4, base_delay=0.08), sender_cfg=cfg)
    assert run.sender.ok and bytes(run.conn.buf) == data
    assert run.sender.report()["retransmissions"]["timeout"] > 0
    assert run.sender.events == []


@pytest.mark.parametrize("cfg", [SenderConfig(ev_min_active=4),
                                 SenderConfig(ev_min_active=4, rto_initial=0.05, rto_min=0.2)],
                         ids=["default", "initial-below-the-floor"])
def test_a_first_round_trip_within_the_rto_floor_times_nothing_out(cfg: SenderConfig) -> None:
    """The same 160 ms first RTT, with the default initial RTO (1 s) and with an
    initial RTO asked below the floor (50 ms under a 200 ms rto_min, raised to it):
    no timeout at all."""
    data = payload(200 * MTU)
    run = run_transfer(data, EVS, SimNet(seed=4, base_delay=0.08), sender_cfg=cfg)
    assert run.sender.ok and bytes(run.conn.buf) == data
    assert run.sender.report()["retransmissions"]["timeout"] == 0


def test_an_ev_comes_back_only_when_a_probe_over_its_own_path_returns() -> None:
    """EV 0x1003's data path dies for good at 10 ms; every other path, and every
    path back, works. Its probes go over its own path and die: it stays ASSUMED_BAD
    to the end, probed all along, never recovered."""
    data = payload(4000 * MTU)
    net = SimNet(seed=5, dead_fwd=lambda t, ev: ev == 0x1003 and t >= 0.01)
    run = run_transfer(data, EVS, net, sender_cfg=SenderConfig(rate_pps=50_000, probe_interval=0.005,
                                                               ev_min_active=4))
    s = run.sender
    assert s.ok and bytes(run.conn.buf) == data
    assert [(e["ev"], e["event"]) for e in s.events] == [(0x1003, "retired")]
    assert s.evs[0x1003].state == ASSUMED_BAD
    t_retired = s.events[0]["t"]
    probes = [p for p in run.to_receiver if p.payload[0] == wire.OP_PROBE]
    assert probes and {p.ev for p in probes} == {0x1003}
    # One every 5 ms from the retirement to the end (80 ms of data): about 14.
    assert len(probes) >= int((run.end - t_retired) / 0.005) - 1
    assert not [p for p in run.delivered_to_sender if p.payload[0] == wire.OP_PROBE_REPLY]


def _random_loss_run(seed: int, retire_after: int):
    data = payload(500 * MTU + 1, seed)
    # 32 EVs of a plain EV list: each a path of its own, so each EV's row is its own
    evs = [EvPath(0x1000 + k, -1, -1) for k in range(32)]
    net = SimNet(seed=seed, loss=0.05, jitter=300e-6)
    # the figures below; the rows alone (no wait: retire_delay 0), as counted there
    cfg = SenderConfig(ev_min_active=8, seed=seed, retire_after=retire_after, window=256, retire_delay=0)
    run = run_transfer(data, evs, net, sender_cfg=cfg)
    assert run.sender.ok and bytes(run.conn.buf) == data
    retired = [e for e in run.sender.events if e["event"] == "retired"]
    return run, retired


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_loss_on_working_paths_retires_at_most_an_unlucky_ev(seed: int) -> None:
    """5% of packets lost anywhere, every path working: each loss is NACKed and
    resent, but an EV is retired only at two losses in a row on it with none of its
    later packets acknowledged (each EV a path of its own here). 500 packets over 32 EVs are about 16 per EV, so an EV
    has 15 pairs of consecutive packets, each lost together with probability 0.05^2:
    about 1.2 such EVs of 32 expected, and fewer still since a later packet's
    acknowledgement arriving before the NACK forgives the loss. With one loss enough
    (``retire_after=1``) some healthy EV of the same run is retired."""
    run, retired = _random_loss_run(seed, retire_after=2)
    rep = run.sender.report()
    assert rep["retransmissions"]["nack"] >= 20  # the rule was exercised
    assert rep["control"]["ev_losses_forgiven"] >= 15
    assert len(retired) <= 2, retired
    _, retired_at_one = _random_loss_run(seed, retire_after=1)
    assert len(retired_at_one) > len(retired)


def test_retire_after_is_checked() -> None:
    with pytest.raises(ValueError, match="retire_after must be at least 1"):
        SenderConfig(retire_after=0).check()
