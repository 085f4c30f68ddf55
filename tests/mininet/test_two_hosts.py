"""Mininet can run the project's networks here: two hosts, one link, IPv6 pings.

Each test uses its own random name prefix so it never touches another run's nodes, and
checks after stopping that nothing of that prefix (namespace, veth, process) remains.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.cleanup import clean, find_leftovers
from topologies.ping import parse_ping
from topologies.two_hosts import LINK_PREFIX, TwoHostNetwork, two_host_network

pytestmark = pytest.mark.root



def _prefix() -> str:
    """A private name prefix: `mrc` + 3 hex digits (interfaces stay under 15 chars)."""
    return "mrc" + secrets.token_hex(2)[:3]


def _assert_nothing_left(prefix: str) -> None:
    left = find_leftovers((prefix,), directory=Path("/nonexistent"))
    if not left.empty():
        clean((prefix,), directory=Path("/nonexistent"))  # leave the machine clean anyway
        pytest.fail(f"Mininet left behind {left.describe()}")


@pytest.fixture
def two_hosts() -> Iterator[TwoHostNetwork]:
    prefix = _prefix()
    try:
        with two_host_network(prefix) as tn:
            yield tn
    finally:
        _assert_nothing_left(prefix)


def test_hosts_ping_each_other_over_ipv6(two_hosts: TwoHostNetwork) -> None:
    forward = two_hosts.ping(0, 1, count=3)
    backward = two_hosts.ping(1, 0, count=3)
    assert forward.ok, forward.output
    assert backward.ok, backward.output
    assert forward.rtt_avg_ms is not None and forward.rtt_avg_ms > 0


def test_hosts_are_ipv6_only_in_separate_namespaces(two_hosts: TwoHostNetwork) -> None:
    h1, h2 = two_hosts.hosts
    ns1 = Path(f"/proc/{h1.pid}/ns/net").stat().st_ino
    ns2 = Path(f"/proc/{h2.pid}/ns/net").stat().st_ino
    root_ns = Path("/proc/self/ns/net").stat().st_ino
    assert len({ns1, ns2, root_ns}) == 3, "each host must have its own network namespace"
    intf = h1.defaultIntf().name
    assert h1.cmd(f"ip -4 -o addr show dev {intf}").strip() == "", "no IPv4 on the link"
    v6 = h1.cmd(f"ip -6 -o addr show dev {intf} scope global")
    assert f"{LINK_PREFIX}1/64" in v6
    assert "tentative" not in v6
    # the link joins the two hosts directly: h2's interface is h1's veth peer
    assert two_hosts.net.switches == [] and two_hosts.net.controllers == []


def test_unreachable_address_is_reported_as_loss(two_hosts: TwoHostNetwork) -> None:
    """The ping check can fail: an address nobody owns gets no replies."""
    from topologies.two_hosts import ping6

    result = ping6(two_hosts.hosts[0], f"{LINK_PREFIX}99", count=1)
    assert not result.ok
    assert result.sent == 1 and result.received == 0


def test_stop_after_failure_leaves_nothing() -> None:
    """An exception inside the network's block still tears everything down."""
    prefix = _prefix()
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        with two_host_network(prefix) as tn:
            pids = [h.pid for h in tn.hosts]
            running = find_leftovers((prefix,), Path("/nonexistent")).processes
            assert set(pids) <= set(running), "the host shells are found while running"
            raise RuntimeError("boom")
    assert pids
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    _assert_nothing_left(prefix)


def test_parse_ping_reads_counts_and_rtt() -> None:
    out = (
        "3 packets transmitted, 2 received, 33.3333% packet loss, time 402ms\n"
        "rtt min/avg/max/mdev = 0.031/0.045/0.060/0.012 ms\n"
    )
    r = parse_ping("a", "b", out)
    assert (r.sent, r.received, r.rtt_avg_ms, r.ok) == (3, 2, 0.045, False)


def test_cleanup_finds_a_daemon_that_outlived_its_host() -> None:
    """A process detached from a host's shell survives `net.stop()` and keeps the host's
    namespace and veth alive; tools/cleanup.py finds it by the interface name and removes it."""
    prefix = _prefix()
    daemon_pid = 0
    try:
        with two_host_network(prefix) as tn:
            out = tn.hosts[0].cmd("setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
            daemon_pid = int(out.strip().splitlines()[-1])
        assert Path(f"/proc/{daemon_pid}").exists(), "the detached process outlived its host"
        left = find_leftovers((prefix,), Path("/nonexistent"))
        assert daemon_pid in left.processes
    finally:
        clean((prefix,), directory=Path("/nonexistent"))
    if daemon_pid:
        deadline = time.monotonic() + 10
        while Path(f"/proc/{daemon_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{daemon_pid}").exists()
    _assert_nothing_left(prefix)
