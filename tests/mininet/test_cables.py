"""A cable's two ends set at once (controller/cable_cuts.py ``set_cable``), on real interfaces.

Why at once: on a cluster each end's command is a round trip to the end's server, and
the link-failure experiment's restore must come while its transfer still runs; one
end after the other doubles the time the cut and the restore take. "At once" is shown
without a clock: the order in which each end's command is started and waited for is
recorded (both started before either is waited for), and the same recorder is shown
to tell a sequential variant apart. The commands themselves are the real ones, on a
veth pair, and their effect is read back from the kernel.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.errors import SwitchError
from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from controller import cable_cuts
from controller.network_state import LinkEnds

pytestmark = pytest.mark.root


def _is_up(intf: str, ns_pid: int | None = None) -> bool:
    flags = subprocess.run(["nsenter", "-t", str(ns_pid), "-n", "ip", "-o", "link", "show", intf] if ns_pid
                           else ["ip", "-o", "link", "show", intf], capture_output=True, text=True, check=True,
                           timeout=20).stdout
    return ",UP" in flags or "<UP" in flags


def _netdev_tables(ns_pid: int | None = None) -> str:
    argv = ["nft", "list", "tables", "netdev"]
    argv = ["nsenter", "-t", str(ns_pid), "-n", *argv] if ns_pid else argv
    return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout


@pytest.fixture
def veth(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A veth pair in this namespace, both ends up, under a private prefix."""
    prefix = private_prefix()
    a, b = f"{prefix}a-eth1", f"{prefix}b-eth1"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True, timeout=20)
    try:
        for intf in (a, b):
            subprocess.run(["ip", "link", "set", intf, "up"], check=True, timeout=20)
        yield a, b
    finally:
        subprocess.run(["ip", "link", "delete", a], capture_output=True, timeout=20)
        assert_nothing_left(prefix, tmp_path)


class _Recorder:
    """Each end's command as it is started and waited for: ("start", intf), ("wait", intf)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, str]] = []
        events = self.events

        class Recorded(subprocess.Popen[str]):
            def __init__(self, argv: list[str], **kw: Any) -> None:
                self.intf = next((a for a in argv if a.endswith("-eth1")), None)  # other commands: not recorded
                if self.intf:
                    events.append(("start", self.intf))
                super().__init__(argv, **kw)

            def communicate(self, *args: Any, **kw: Any) -> tuple[Any, Any]:
                if self.intf:
                    events.append(("wait", self.intf))
                return super().communicate(*args, **kw)

        monkeypatch.setattr(subprocess, "Popen", Recorded)  # the module controller.cable_cuts calls


def _one_after_the_other(ends: LinkEnds, up: bool) -> None:
    """A sequential variant of ``set_cable``: each end started and waited for in turn."""
    for pid, intf, server in ((ends.a_pid, ends.a_intf, ends.a_server), (ends.b_pid, ends.b_intf, ends.b_server)):
        failure = cable_cuts._EndCommand(pid, intf, up, False, server).wait()
        assert failure is None, failure


def test_both_ends_are_started_before_either_is_waited_for(veth: tuple[str, str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = veth
    ends = LinkEnds("a", a, "b", b)
    rec = _Recorder(monkeypatch)
    assert cable_cuts.set_cable(ends, up=False) == f"{a} and {b} down"
    assert rec.events == [("start", a), ("start", b), ("wait", a), ("wait", b)]
    assert (_is_up(a), _is_up(b)) == (False, False)  # the kernel: both ends down
    rec.events.clear()
    cable_cuts.set_cable(ends, up=True)
    assert rec.events == [("start", a), ("start", b), ("wait", a), ("wait", b)]
    assert (_is_up(a), _is_up(b)) == (True, True)
    # the recorder tells the sequential way apart
    rec.events.clear()
    _one_after_the_other(ends, up=False)
    assert rec.events == [("start", a), ("wait", a), ("start", b), ("wait", b)]
    assert (_is_up(a), _is_up(b)) == (False, False)


def test_a_failing_end_is_named_once_both_have_been_tried(veth: tuple[str, str]) -> None:
    a, _ = veth
    missing = a.replace("a-eth1", "z-eth1")  # no such interface
    with pytest.raises(SwitchError, match=rf"cannot set {missing} down: .*") as err:
        cable_cuts.set_cable(LinkEnds("b", missing, "a", a), up=False)
    assert a not in str(err.value)  # only the end that failed
    assert not _is_up(a)  # the other end was set all the same


class _Shells:
    """Two Mininet nodes, each in a namespace of its own, joined by a veth; their shells
    record the order in which commands are sent to them and waited for."""

    def __init__(self, prefix: str) -> None:
        from mininet.link import Link
        from mininet.node import Node

        self.events: list[tuple[str, str]] = []
        events = self.events

        class RecordedNode(Node):  # type: ignore[misc]
            def sendCmd(self, *args: Any, **kw: Any) -> None:
                events.append(("send", self.name))
                super().sendCmd(*args, **kw)

            def waitOutput(self, *args: Any, **kw: Any) -> str:
                events.append(("wait", self.name))
                out: str = super().waitOutput(*args, **kw)
                return out

        self.a, self.b = RecordedNode(f"{prefix}a"), RecordedNode(f"{prefix}b")
        self.link = Link(self.a, self.b)
        self.a_intf, self.b_intf = self.link.intf1.name, self.link.intf2.name
        self.ends = LinkEnds(self.a.name, self.a_intf, self.b.name, self.b_intf)
        self.nodes = {self.a.name: self.a, self.b.name: self.b}
        self.events.clear()  # what making the nodes and the link sent them

    def stop(self) -> None:
        self.link.delete()
        for node in (self.a, self.b):
            node.terminate()


@pytest.fixture
def shells(tmp_path: Path) -> Iterator[_Shells]:
    prefix = private_prefix()
    s = None
    try:
        s = _Shells(prefix)
        yield s
    finally:
        if s is not None:
            s.stop()
        assert_nothing_left(prefix, tmp_path)


def test_in_the_nodes_shells_both_ends_are_sent_before_either_is_waited_for(shells: _Shells) -> None:
    s = shells
    assert cable_cuts.set_cable(s.ends, up=False, nodes=s.nodes) == f"{s.a_intf} and {s.b_intf} down"
    assert s.events == [("send", s.a.name), ("send", s.b.name), ("wait", s.a.name), ("wait", s.b.name)]
    assert (_is_up(s.a_intf, s.a.pid), _is_up(s.b_intf, s.b.pid)) == (False, False)  # in each node's namespace
    cable_cuts.set_cable(s.ends, up=True, nodes=s.nodes)
    assert (_is_up(s.a_intf, s.a.pid), _is_up(s.b_intf, s.b.pid)) == (True, True)
    # a failure in a shell is named, as the process's is
    s.events.clear()
    with pytest.raises(SwitchError, match=r"cannot set nosuch-eth9 down: .*nosuch-eth9"):
        cable_cuts.set_cable(LinkEnds(s.a.name, "nosuch-eth9", s.b.name, s.b_intf), up=False, nodes=s.nodes)
    assert not _is_up(s.b_intf, s.b.pid)
    assert s.events == [("send", s.a.name), ("send", s.b.name), ("wait", s.a.name), ("wait", s.b.name)]


def test_in_the_nodes_shells_a_cut_that_keeps_the_carrier_is_an_nftables_table_there(shells: _Shells) -> None:
    s = shells
    said = cable_cuts.set_cable(s.ends, up=False, keep_carrier=True, nodes=s.nodes)
    assert said == f"{s.a_intf} and {s.b_intf} down (carrier kept: nothing sent crosses it)"
    for node, intf in ((s.a, s.a_intf), (s.b, s.b_intf)):
        assert cable_cuts.cut_table(intf) in _netdev_tables(node.pid)  # in the node's own namespace
        assert _is_up(intf, node.pid)  # the interface stays up
    assert cable_cuts.cut_table(s.a_intf) not in _netdev_tables()  # not here
    # what a cut end sends is dropped: a ping across the cable gets no answer
    s.a.setIP("10.99.0.1/30", intf=s.a_intf)
    s.b.setIP("10.99.0.2/30", intf=s.b_intf)
    assert " 0 received" in s.a.cmd("ping -c 1 -W 1 10.99.0.2")
    cable_cuts.set_cable(s.ends, up=True, keep_carrier=True, nodes=s.nodes)
    assert all(cable_cuts.cut_table(i) not in _netdev_tables(n.pid) for n, i in ((s.a, s.a_intf), (s.b, s.b_intf)))
    assert " 1 received" in s.a.cmd("ping -c 1 -W 2 10.99.0.2")
    cable_cuts.set_cable(s.ends, up=True, keep_carrier=True, nodes=s.nodes)  # restoring twice is no failure
