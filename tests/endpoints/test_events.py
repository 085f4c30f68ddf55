"""EV events: their format, the collector that stores them, the drop count.

Real Unix datagram sockets and the real collector (controller/events.py) in a
thread; the sender is the real state machine over the simulated network
(tests/endpoints/simnet.py) with one path dead."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.events import Collector, Filter, read
from endpoints.events import EVENTS_ENV, Publisher, ev_event, hop_links
from endpoints.transport import SenderConfig
from fabric.paths import paths
from fabric.plan import nic_evs
from fabric.topology import from_parameters
from tests.endpoints.simnet import SimNet, run_transfer


def test_links_of_a_path_are_named_as_mrcctl_links_names_them() -> None:
    assert hop_links(["nic1", "p0-leaf0", "p0-spine1", "p0-leaf1", "nic3"]) == [
        "nic1:p0-leaf0", "p0-leaf0:p0-spine1", "p0-leaf1:p0-spine1", "nic3:p0-leaf1"]
    assert hop_links(["nic1", "p2-leaf0", "nic2"]) == ["nic1:p2-leaf0", "nic2:p2-leaf0"]


def test_an_event_has_every_field_of_the_format() -> None:
    e = ev_event(1700000000.5, 0x1004, 0, ["nic1", "p0-leaf0", "p0-spine0", "p0-leaf1", "nic3"],
                 "GOOD", "ASSUMED_BAD", "nack")
    assert e == {"t": 1700000000.5, "host": "h1", "peer": "h3", "ev": 0x1004, "plane": 0,
                 "switches": ["p0-leaf0", "p0-spine0", "p0-leaf1"],
                 "links": ["nic1:p0-leaf0", "p0-leaf0:p0-spine0", "p0-leaf1:p0-spine0", "nic3:p0-leaf1"],
                 "old": "GOOD", "new": "ASSUMED_BAD", "cause": "nack", "transport": "mrc"}


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    c = Collector(tmp_path)
    stop = threading.Event()
    t = threading.Thread(target=c.run, args=(stop.is_set, 0.02), daemon=True)
    t.start()
    yield c
    stop.set()
    t.join(5)
    c.close()


def wait_lines(path: Path, n: int) -> list[dict[str, object]]:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = read(path)
        if len(got) >= n:
            return got
        time.sleep(0.02)
    return read(path)


def test_events_lost_without_a_collector_are_counted_in_the_next(tmp_path: Path) -> None:
    sock = tmp_path / "events.sock"
    pub = Publisher(str(sock), clock=lambda: 5.0)
    e = ev_event(5.0, 1, 0, ["nic1", "p0-leaf0", "nic2"], "GOOD", "ASSUMED_BAD", "nack")
    for _ in range(3):
        assert pub.publish(e) is False  # no socket yet: lost, counted
    c = Collector(tmp_path)
    try:
        assert pub.publish(e) and pub.publish(e)
        for _ in range(2):
            c.take(c.sock.recv(65536))
    finally:
        c.close()
    got = read(tmp_path / "events.jsonl")
    assert [x["dropped"] for x in got] == [3, 0]


def test_a_full_queue_costs_events_not_the_publisher(tmp_path: Path) -> None:
    # A collector that reads nothing: its queue fills, sendto never blocks.
    path = tmp_path / "slow.sock"
    slow = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    slow.bind(str(path))
    pub = Publisher(str(path))
    e = ev_event(1.0, 1, 0, ["nic1", "p0-leaf0", "nic2"], "GOOD", "ASSUMED_BAD", "nack")
    results = [pub.publish(e) for _ in range(5000)]
    lost = results.count(False)
    assert lost > 0  # the queue is finite (net.unix.max_dgram_qlen)
    slow.setblocking(False)
    got = []
    while True:
        try:
            got.append(json.loads(slow.recv(65536)))
        except BlockingIOError:
            break
    assert pub.publish(e)  # room again: this one carries the count
    got.append(json.loads(slow.recv(65536)))
    assert len(got) == results.count(True) + 1
    assert sum(x["dropped"] for x in got) == lost  # every lost event is counted once
    assert got[-1]["dropped"] == lost - sum(x["dropped"] for x in got[:-1])
    slow.close()


def test_the_collector_skips_what_is_not_an_event(collector: Collector) -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    for data in (b"not json", b"[1, 2]", b'{"no": "time"}', b'{"t": 1.5, "host": "h1"}'):
        s.sendto(data, str(collector.sock_path))
    got = wait_lines(collector.log, 1)
    assert [(x["t"], x["host"]) for x in got] == [(1.5, "h1")]
    assert collector.rejected == 3


def test_a_sender_publishes_each_state_change_with_its_path(collector: Collector,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    topo = from_parameters(planes=2, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=8)
    h1, h2 = topo.host("h1"), topo.host("h2")
    evs = nic_evs(topo, h1, h2)
    names = {p.ev: " > ".join(p.hops) for p in paths(topo, h1, h2)}
    monkeypatch.setenv(EVENTS_ENV, str(collector.sock_path))
    dead = 0x1002  # EV 2: plane 0, spine 1 (EV k: plane k mod 2, spine (k // 2) mod 2)
    net = SimNet(seed=3, dead_fwd=lambda t, ev: ev == dead and 0.005 <= t < 0.03)
    run = run_transfer(bytes(2_000_000), evs, net, path_names=names,
                       sender_cfg=SenderConfig(rate_pps=50_000, probe_interval=0.005, ev_min_active=2, seed=3,
                                                       retire_delay=0.005))
    assert run.sender.ok
    got = wait_lines(collector.log, 2)
    assert [(x["ev"], x["old"], x["new"], x["cause"]) for x in got] == [
        (dead, "GOOD", "ASSUMED_BAD", "nack"), (dead, "ASSUMED_BAD", "GOOD", "probe")]
    for x in got:
        assert (x["host"], x["peer"], x["plane"], x["transport"], x["dropped"]) == ("h1", "h2", 0, "mrc", 0)
        assert x["switches"] == ["p0-leaf0", "p0-spine1", "p0-leaf1"]
        assert x["links"] == ["nic1:p0-leaf0", "p0-leaf0:p0-spine1", "p0-leaf1:p0-spine1", "nic2:p0-leaf1"]
    assert got[0]["t"] <= got[1]["t"]
    assert [x["ev"] for x in read(collector.log, Filter(link="p0-spine1:p0-leaf0", state="good"))] == [dead]
    assert read(collector.log, Filter(host="h3")) == []


def test_without_the_environment_nothing_is_published(collector: Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENTS_ENV, raising=False)
    topo = from_parameters(planes=2, spines=2, leaves=2, hosts_per_leaf=1, evs_per_nic=8)
    h1, h2 = topo.host("h1"), topo.host("h2")
    names = {p.ev: " > ".join(p.hops) for p in paths(topo, h1, h2)}
    net = SimNet(seed=3, dead_fwd=lambda t, ev: ev == 0x1002 and t >= 0.005)
    run = run_transfer(bytes(500_000), nic_evs(topo, h1, h2), net, path_names=names,
                       sender_cfg=SenderConfig(rate_pps=50_000, probe_interval=0.005, ev_min_active=2, seed=3))
    assert run.sender.events  # it did change states
    assert read(collector.log) == []


def test_a_roce_qp_in_the_error_state_is_published_as_its_evs_error(collector: Collector,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """mrc-send --transport roce's send loop over a real loopback socket to a port no
    receiver holds: every OPEN goes unanswered, the QP ends in the error state at the
    time limit, and the collector hears of its one EV going to ERROR, with the QP's path."""
    from endpoints.roce_cli import SendRun, run_send
    from endpoints.roce_config import RoceSenderConfig

    monkeypatch.setenv(EVENTS_ENV, str(collector.sock_path))
    free = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    free.bind(("::1", 0))
    port = free.getsockname()[1]
    free.close()  # nobody listens there now
    ev = 0x1005
    path = "nic1 > p1-leaf0 > p1-spine0 > p1-leaf1 > nic2"
    run = SendRun(to="::1", port=port, bind="::1", src="::1", sport=0, evs=[ev], names={ev: path}, dscp=26,
                  gso=False, timeout=1.0, linger=0.0)

    def fail(msg: str) -> None:
        raise AssertionError(msg)

    rep = run_send(run, bytes(3000), RoceSenderConfig(ack_timeout=0.05, retry_count=0), fail)  # type: ignore[arg-type]
    assert rep["state"] == "error", rep["error"]
    assert "no verdict from the receiver within 1 s" in rep["error"], rep["error"]
    (got,) = wait_lines(collector.log, 1)
    assert {k: got[k] for k in ("host", "peer", "ev", "plane", "switches", "old", "new", "transport", "dropped")} == {
        "host": "h1", "peer": "h2", "ev": ev, "plane": 1, "switches": ["p1-leaf0", "p1-spine0", "p1-leaf1"],
        "old": "GOOD", "new": "ERROR", "transport": "roce", "dropped": 0}
    assert got["links"] == ["nic1:p1-leaf0", "p1-leaf0:p1-spine0", "p1-leaf1:p1-spine0", "nic2:p1-leaf1"]
    assert got["cause"] == rep["error"]
