"""tools/cleanup.py (what `make clean` runs) removes our leftovers and nothing else.

Each test uses its own random prefix and run directory, so it can never remove another
run's namespaces or switches.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.cleanup import find_leftovers

REPO = Path(__file__).resolve().parents[2]
CLEANUP = REPO / "tools" / "cleanup.py"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


def _cleanup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CLEANUP), *args], capture_output=True, text=True, timeout=60)


def _alive(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is None


class Scene:
    """Resources a crashed run could leave: all torn down at the end whatever happens."""

    def __init__(self, tmp_path: Path) -> None:
        self.prefix = "mrcz" + secrets.token_hex(2)
        self.run_dir = tmp_path / "run"
        self.run_dir.mkdir()
        self.procs: list[subprocess.Popen[bytes]] = []
        self.namespaces: list[str] = []

    def spawn(self, *argv: str) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    def teardown(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        for name in (f"{self.prefix}a", f"{self.prefix}b"):
            subprocess.run(["ip", "link", "delete", name], capture_output=True)


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    s = Scene(tmp_path)
    try:
        yield s
    finally:
        s.teardown()


def _sleeper(tag: str) -> list[str]:
    """A long-running Python process whose command line carries `tag`."""
    return [sys.executable, "-c", "import time; time.sleep(120)", tag]


def _wait_started(proc: subprocess.Popen[bytes], tag: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if tag.encode() in Path(f"/proc/{proc.pid}/cmdline").read_bytes():
            return
        time.sleep(0.02)
    raise AssertionError(f"process {proc.pid} did not start")


@pytest.mark.root
def test_cleanup_removes_our_namespaces_veths_and_switches_only(scene: Scene) -> None:
    ns = f"{scene.prefix}ns"
    _ip("netns", "add", ns)
    scene.namespaces.append(ns)
    _ip("link", "add", f"{scene.prefix}a", "type", "veth", "peer", "name", f"{scene.prefix}b")
    _ip("link", "set", f"{scene.prefix}b", "netns", ns)
    in_ns = scene.spawn("ip", "netns", "exec", ns, "sleep", "120")
    switch = scene.spawn(*_sleeper("p4target-run-fake"))
    _wait_started(switch, "p4target-run-fake")
    (scene.run_dir / "s1.pid").write_text(f"{switch.pid}\n")
    # a pid file naming a process that is not a switch: never killed
    bystander = scene.spawn(*_sleeper("not-a-switch"))
    _wait_started(bystander, "not-a-switch")
    (scene.run_dir / "other.pid").write_text(f"{bystander.pid}\n")
    # a switch-looking process started after its pid file was written: a recycled pid
    recycled = scene.spawn(*_sleeper("p4target-recycled"))
    _wait_started(recycled, "p4target-recycled")
    stale = scene.run_dir / "old.pid"
    stale.write_text(f"{recycled.pid}\n")
    past = time.time() - 3600
    os.utime(stale, (past, past))
    deadline = time.monotonic() + 10
    while not find_leftovers((scene.prefix,), scene.run_dir).namespaces and time.monotonic() < deadline:
        time.sleep(0.05)

    left = find_leftovers((scene.prefix,), scene.run_dir)
    assert left.namespaces == (ns,)
    assert left.links == (f"{scene.prefix}a",)
    assert switch.pid in left.processes
    assert bystander.pid not in left.processes and recycled.pid not in left.processes
    assert _cleanup("--check", "--prefix", scene.prefix, "--run-dir", str(scene.run_dir)).returncode == 1

    res = _cleanup("--prefix", scene.prefix, "--run-dir", str(scene.run_dir))
    assert res.returncode == 0, res.stdout + res.stderr
    assert ns in res.stdout

    assert switch.wait(timeout=10) == -signal.SIGTERM
    assert in_ns.wait(timeout=10) is not None
    assert _alive(bystander) and _alive(recycled), "unrelated processes are left alone"
    assert list(scene.run_dir.glob("*.pid")) == []
    check = _cleanup("--check", "--prefix", scene.prefix, "--run-dir", str(scene.run_dir))
    assert check.returncode == 0, check.stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert scene.prefix not in links
    assert ns not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_cleanup_with_nothing_left_says_so(tmp_path: Path) -> None:
    prefix = "mrcz" + secrets.token_hex(2)
    res = _cleanup("--prefix", prefix, "--run-dir", str(tmp_path))
    assert res.returncode == 0
    assert "nothing of ours left" in res.stdout


def test_cleanup_rejects_bad_arguments() -> None:
    res = _cleanup("--bogus")
    assert res.returncode == 2
    assert "Traceback" not in res.stderr


def test_node_mark_is_the_same_in_topologies_and_cleanup() -> None:
    from topologies.node_marks import NODE_ENV as topo_mark
    from tools.cleanup import NODE_ENV as cleanup_mark

    assert topo_mark == cleanup_mark


def test_node_record_is_the_same_file_in_topologies_and_cleanup(tmp_path) -> None:
    pytest.importorskip("mininet")
    from fabric.topology import from_parameters
    from topologies.fabric_net import NODES_RECORD, write_nodes_record
    from fabric.names import node_names
    from tools.cleanup import NODES_RECORD as cleanup_record, recorded

    assert NODES_RECORD == cleanup_record
    topo = from_parameters(planes=1, spines=1, leaves=2, hosts_per_leaf=1)
    write_nodes_record(tmp_path, topo, node_names(topo))
    rec = recorded(tmp_path)
    # the Mininet nodes, and the event collector (no node, but it carries the mark "events")
    assert rec.nodes == {"h1", "h2", "nic1", "nic2", "p0-leaf0", "p0-leaf1", "p0-spine0", "events"}
    # the switch ends: NICs' ports 0 and 1, each leaf's host port and uplink, the spine's two ports
    assert rec.interfaces == {"nic1-eth0", "nic1-eth1", "nic2-eth0", "nic2-eth1", "p0-leaf0-eth1", "p0-leaf0-eth2",
                              "p0-leaf1-eth1", "p0-leaf1-eth2", "p0-spine0-eth1", "p0-spine0-eth2"}


def test_processes_carrying_our_node_mark_are_found(scene: Scene) -> None:
    marked = subprocess.Popen(_sleeper("marked"), env={**os.environ, "MRC_P4_NODE": f"{scene.prefix}h1"})
    scene.procs.append(marked)
    other = subprocess.Popen(_sleeper("other-mark"), env={**os.environ, "MRC_P4_NODE": "someoneelse"})
    scene.procs.append(other)
    _wait_started(marked, "marked")
    _wait_started(other, "other-mark")
    left = find_leftovers((scene.prefix,), scene.run_dir)
    assert marked.pid in left.processes
    assert other.pid not in left.processes


def test_a_cut_cable_table_is_named_the_same_in_the_controller_and_cleanup() -> None:
    from controller.cable_cuts import cut_table
    from tools.cleanup import _cut_name

    for intf in ("p0-leaf0-eth3", "mrcab1p0l0-eth12", "nic1-eth1"):
        assert cut_table(intf) == _cut_name(intf)
    assert cut_table("p0-leaf0-eth3") == "mrc_cut_p0_leaf0_eth3"


@pytest.mark.root
def test_a_cut_cable_left_behind_is_found_and_removed_and_nothing_else(tmp_path: Path) -> None:
    from controller.network_state import LinkEnds
    from controller.cable_cuts import set_cable
    from tools.cleanup import clean

    prefix = "mrc" + secrets.token_hex(2)[:3]
    a, b = f"{prefix}a-eth1", f"{prefix}b-eth1"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    other = "keep_" + secrets.token_hex(3)  # not ours: must stay
    subprocess.run(["nft", "add", "table", "netdev", other], check=True)
    try:
        for intf in (a, b):
            subprocess.run(["ip", "link", "set", intf, "up"], check=True)
        said = set_cable(LinkEnds(f"{prefix}a", a, f"{prefix}b", b), up=False, keep_carrier=True)
        assert said == f"{a} and {b} down (carrier kept: nothing sent crosses it)"
        tables = subprocess.run(["nft", "list", "tables", "netdev"], capture_output=True, text=True).stdout
        assert f"mrc_cut_{prefix}a_eth1" in tables and f"mrc_cut_{prefix}b_eth1" in tables
        state = subprocess.run(["ip", "-br", "link", "show", a], capture_output=True, text=True).stdout
        assert "UP" in state.split()[1]  # the carrier is kept: the interface stays up
        left = find_leftovers((prefix,), directory=tmp_path)
        assert left.cut_tables == (f"mrc_cut_{prefix}a_eth1", f"mrc_cut_{prefix}b_eth1")
        clean((prefix,), directory=tmp_path)
        tables = subprocess.run(["nft", "list", "tables", "netdev"], capture_output=True, text=True).stdout
        assert "mrc_cut_" + prefix not in tables and other in tables
    finally:
        subprocess.run(["ip", "link", "delete", a], capture_output=True)
        for t in (other, f"mrc_cut_{prefix}a_eth1", f"mrc_cut_{prefix}b_eth1"):
            subprocess.run(["nft", "delete", "table", "netdev", t], capture_output=True)
