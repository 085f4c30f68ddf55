"""The fabric in real Mininet: P4 switch processes, the controller's tables, real packets.

One small network (2 planes x (2 leaves + 1 spine), 2 hosts per leaf: 6 fabric
switches, 4 NICs, 4 hosts) is started once for this module under a private name
prefix, gRPC ports and run directory, programmed by the controller, and shared by
the tests in order; tests that break something (a cut link, a killed switch) put it
back. The module's teardown checks that nothing of the prefix is left (namespaces,
veths, processes, pid files), and removes it if a test failed badly.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabric.topology import from_parameters
from tests.mininet.fast_path import assert_compiled_fast_path
from tests.mininet.net_prefix import assert_nothing_left, private_prefix
from tools.cleanup import clean, find_leftovers
from topologies.fabric_net import FabricNetwork, fabric_network, install_tables, programmed_network

pytestmark = pytest.mark.root

SHAPE = dict(planes=2, spines=1, leaves=2, hosts_per_leaf=2)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricNetwork]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    prefix = private_prefix()
    run_dir = tmp_path_factory.mktemp("fabric-run")
    try:
        with programmed_network(from_parameters(**SHAPE), prefix=prefix, run_dir=run_dir, target="embedded") as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def _link(intf: str, pid: int | None = None) -> dict:
    cmd = ["ip", "-j", "link", "show", "dev", intf]
    if pid:
        cmd = ["nsenter", "-t", str(pid), "-n", *cmd]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=10).stdout)[0]


def _peers(a: str, b: str, a_pid: int | None = None) -> bool:
    """Are interfaces a and b the two ends of one veth? (b in the root namespace, a in
    the namespace of process a_pid when given)"""
    ja, jb = _link(a, a_pid), _link(b)
    if a_pid is None:
        return ja.get("link") == b and jb.get("link") == a
    return ja.get("link_index") == jb["ifindex"] and jb.get("link_index") == ja["ifindex"]


def _read_tables(fn: FabricNetwork, names: list[str]) -> dict[str, list[str]]:
    from controller.codec import codec
    from controller.p4rt import Session

    async def one(name: str) -> tuple[str, list[str]]:
        t = fn.inventory.switches[name]
        async with Session(t) as s:
            return name, sorted(map(repr, await s.read_entries(codec(t.program, t.target))))

    async def all_() -> dict[str, list[str]]:
        return dict(await asyncio.gather(*(one(n) for n in names)))

    return asyncio.run(all_())


# ---- the network is up and cabled as the controller says ---------------------------


def test_every_switch_runs_and_answers_p4runtime(fabric: FabricNetwork) -> None:
    from topologies.p4switch import grpc_answers

    state = json.loads(fabric.state_path.read_text())
    assert sorted(state["switches"]) == sorted(
        ["p0-leaf0", "p0-leaf1", "p0-spine0", "p1-leaf0", "p1-leaf1", "p1-spine0", "nic1", "nic2", "nic3", "nic4"])
    assert sorted(v["device_id"] for v in state["switches"].values()) == list(range(1, 11))
    addresses = {v["address"] for v in state["switches"].values()}
    assert len(addresses) == 10
    for name, entry in state["switches"].items():
        sw = fabric.switch(name)
        assert sw.alive and sw.grpc_addr == entry["address"]
        assert entry["program"] == ("nic" if name.startswith("nic") else "fabric")
        assert grpc_answers(entry["address"], timeout=5), f"{name} does not answer at {entry['address']}"
        assert sw.pid_path.read_text().strip() == str(sw.proc.pid)
    assert not grpc_answers("127.0.0.1:1", timeout=0.5), "the check can fail"
    assert_compiled_fast_path(fabric)  # the end-to-end tests below measure the fast path users run


def test_cables_join_the_ports_the_controller_uses(fabric: FabricNetwork) -> None:
    p = fabric.names.prefix
    # Written out from the plan: 2 hosts per leaf, so a leaf's uplink to spine 0 is port 3.
    assert _peers(f"{p}p0l0-eth3", f"{p}p0s0-eth1") and _peers(f"{p}p1l1-eth3", f"{p}p1s0-eth2")
    assert _peers(f"{p}n2-eth1", f"{p}p0l0-eth2") and _peers(f"{p}n3-eth2", f"{p}p1l1-eth1")
    assert not _peers(f"{p}p0l0-eth3", f"{p}p0s0-eth2"), "the peer check can fail"
    h1 = fabric.host("h1")
    assert _peers(f"{p}h1-eth0", f"{p}n1-eth0", a_pid=h1.pid)
    state = json.loads(fabric.state_path.read_text())
    assert len(state["links"]) == 2 * 2 + 4 * 2  # leaf-spine cables + NIC-leaf cables
    for name, ends in state["links"].items():
        assert _peers(ends["a_intf"], ends["b_intf"]), name
    # each switch process was given exactly its node's interfaces as its ports
    args = " ".join(fabric.switch("p0-leaf0").command())
    assert f"-i 1@{p}p0l0-eth1 -i 2@{p}p0l0-eth2 -i 3@{p}p0l0-eth3 " in args
    args = " ".join(fabric.switch("nic4").command())
    assert f"-i 0@{p}n4-eth0 -i 1@{p}n4-eth1 -i 2@{p}n4-eth2 " in args
    # a NIC's host port, and only it, holds a host's bursts in a larger receive ring
    assert "--rx-ring-frames 0=16384" in args and "--rx-ring-frames" not in " ".join(
        fabric.switch("p0-leaf0").command())
    log = fabric.switch("nic4").log_path.read_text()
    assert f"0@{p}n4-eth0 (PACKET_MMAP rings, 16384 receive slots)" in log
    assert f"1@{p}n4-eth1 (PACKET_MMAP rings, 4096 receive slots)" in log


def test_hosts_have_the_plan_address_gateway_and_mtu(fabric: FabricNetwork) -> None:
    h3 = fabric.host("h3")  # first host of leaf 1
    intf = h3.defaultIntf().name
    assert "fd00:0:1:1::1/64" in h3.addresses() and "tentative" not in h3.addresses()
    assert "default via fd00:0:1:1::fe" in h3.cmd("ip -6 route show default")
    assert "mtu 1460" in h3.cmd(f"ip link show {intf}")
    assert "02:04:00:00:20:00" in h3.cmd(f"ip link show {intf}")
    assert h3.cmd(f"ip -4 -o addr show dev {intf}").strip() == ""


# ---- traffic through the programmed fabric ----------------------------------------


def test_every_host_pair_pings_over_ipv6(fabric: FabricNetwork) -> None:
    from topologies.demo import ping_matrix

    matrix = ping_matrix(fabric, count=2)
    assert len(matrix) == 12
    failed = [r.summary() for r in matrix.values() if not r.ok]
    assert not failed, failed
    from topologies.ping import ping6

    assert not ping6(fabric.host("h1"), "fd00:0:1:3::1", count=1).ok, "an address no host has gets no reply"


def test_packets_arrive_at_the_receiving_host_with_correct_checksums(fabric: FabricNetwork) -> None:
    from tests.mininet.host_capture import checksums_ok, exchange

    got = exchange(fabric.host("h1"), fabric.host("h3"), fabric.address("h1"), fabric.address("h3"))
    kinds = [checksums_ok(f) for f in got["frames"]]
    assert {k for k, _ in kinds} == {"UDP", "TCP"}, kinds
    assert all(ok for _, ok in kinds), kinds
    assert got["udp"] == "udp checksum probe " * 20 and got["tcp"] == "tcp checksum probe " * 20 + "END"


@dataclass
class Stream:
    """A plain MRC-lite WRITE stream (topologies/mrc_flow.py: one packet per EV, round
    robin, no transport) and the packets per plane its two NICs counted."""

    sent: int
    received: int
    planes_before: dict[int, int]  # what the source NIC sent into each plane
    delivered_before: dict[int, int]  # what the destination NIC received from each plane


def run_flow(fn: FabricNetwork, src: str, dst: str, packets: int, pps: float) -> Stream:
    from fabric import plan as P
    from controller.counters import delta, read_all
    from topologies.mrc_flow import run_stream

    s, d = fn.topo.host(src), fn.topo.host(dst)
    targets = [fn.inventory.switches[s.nic], fn.inventory.switches[d.nic]]
    before = asyncio.run(read_all(targets))
    got = run_stream(fn, src, dst, [e.ev for e in P.nic_evs(fn.topo, s, d)], packets, pps)
    diff = delta(asyncio.run(read_all(targets)), before)

    def planes(nic: str, counter: str) -> dict[int, int]:
        return {p: pk for p, (pk, _) in sorted(diff[nic].get(counter, {}).items())}

    return Stream(got["sent"], got["received"], planes(s.nic, "NicEgress.plane_tx"),
                  planes(d.nic, "NicIngress.plane_rx"))


def test_one_flow_reaches_the_other_host_over_every_plane(fabric: FabricNetwork) -> None:
    flow = run_flow(fabric, "h1", "h4", packets=200, pps=400)
    assert (flow.sent, flow.received) == (200, 200)
    # 64 EVs, EV k on plane k mod 2, sent round robin: 100 packets into each plane
    assert flow.planes_before == {0: 100, 1: 100}
    assert flow.delivered_before == {0: 100, 1: 100}


def test_a_cut_cable_changes_no_table_and_a_denied_link_only_the_nics(fabric: FabricNetwork) -> None:
    from controller.repair import set_denied
    from controller.cable_cuts import set_link

    fabric_names = [n for n in fabric.inventory.switches if not n.startswith("nic")]
    nic_names = [n for n in fabric.inventory.switches if n.startswith("nic")]
    fabric_before, nics_before = _read_tables(fabric, fabric_names), _read_tables(fabric, nic_names)
    link = "p0-leaf0:p0-spine0"  # the only spine of plane 0: leaf 0 loses plane 0 to leaf 1
    try:
        asyncio.run(set_link(fabric.topo, fabric.inventory, link, down=True))
        assert "state DOWN" in subprocess.run(["ip", "link", "show", fabric.inventory.links[link].a_intf],
                                              capture_output=True, text=True).stdout
        # The cable alone: no table at all.
        assert _read_tables(fabric, fabric_names) == fabric_before
        assert _read_tables(fabric, nic_names) == nics_before
        # The operator denies it: the NICs move off it, the fabric still unchanged.
        asyncio.run(set_denied(fabric.topo, fabric.inventory, link, denied=True))
        assert _read_tables(fabric, fabric_names) == fabric_before
        nics_after = _read_tables(fabric, nic_names)
        assert nics_after != nics_before, "the NICs moved off the denied link"
        flow = run_flow(fabric, "h1", "h3", packets=100, pps=400)
        assert (flow.sent, flow.received) == (100, 100)
        assert flow.planes_before.get(0, 0) == 0 and flow.planes_before[1] == 100
        same_leaf = run_flow(fabric, "h1", "h2", packets=40, pps=400)  # no spine on that path
        assert same_leaf.received == 40 and same_leaf.planes_before == {0: 20, 1: 20}
    finally:
        asyncio.run(set_denied(fabric.topo, fabric.inventory, link, denied=False))
        asyncio.run(set_link(fabric.topo, fabric.inventory, link, down=False))
    assert _read_tables(fabric, nic_names) == nics_before
    back = run_flow(fabric, "h1", "h3", packets=100, pps=400)
    assert back.received == 100 and back.planes_before == {0: 50, 1: 50}


def test_mrcctl_reaches_the_running_network_through_its_state_file(fabric: FabricNetwork) -> None:
    """No topology given: mrcctl reads network.json; `fail` sets the Mininet cable down."""
    mrcctl = [str(REPO / ".venv" / "bin" / "mrcctl"), "--state", str(fabric.state_path)]
    res = subprocess.run([*mrcctl, "install"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "nothing to change" in res.stdout, res.stdout
    link = "p1-leaf1:p1-spine0"
    intf = fabric.inventory.links[link].b_intf  # the spine's end
    try:
        res = subprocess.run([*mrcctl, "fail", link], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "state DOWN" in subprocess.run(["ip", "link", "show", intf], capture_output=True, text=True).stdout
        assert link in json.loads(fabric.state_path.read_text())["down"]
    finally:
        res = subprocess.run([*mrcctl, "restore", link], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "state DOWN" not in subprocess.run(["ip", "link", "show", intf], capture_output=True, text=True).stdout
    assert json.loads(fabric.state_path.read_text())["down"] == []
    fabric.reload_inventory()


def test_a_killed_switch_is_restarted_and_reconciled(fabric: FabricNetwork) -> None:
    spine = fabric.switch("p0-spine0")
    old_pid = spine.proc.pid
    spine.proc.kill()
    spine.proc.wait(timeout=10)
    with pytest.raises(Exception, match="p0-spine0 .* was killed by SIGKILL"):
        fabric.check_switches()
    spine.restart()
    assert spine.alive and spine.proc.pid != old_pid
    assert _read_tables(fabric, ["p0-spine0"])["p0-spine0"] == [], "a restarted switch starts empty"
    rep = install_tables(fabric)
    writes = {r.name: r.writes for r in rep.results if r.writes}
    # my_sid + dscp_priority + 2 trim_class + (port_mac + trim_config + ecn_config) x 2 ports
    # + (uN fwd + uA) x 2 leaves
    assert writes == {"p0-spine0": 14}
    assert install_tables(fabric).writes == 0, "a second reconcile writes nothing"
    flow = run_flow(fabric, "h2", "h3", packets=100, pps=400)
    assert flow.received == 100 and flow.planes_before == {0: 50, 1: 50}


def test_a_second_network_with_the_same_prefix_is_refused(fabric: FabricNetwork, tmp_path: Path) -> None:
    from topologies.fabric_net import NetworkBusy

    with pytest.raises(NetworkBusy, match=f"a network with node prefix '{fabric.names.prefix}' is running"):
        with fabric_network(from_parameters(**SHAPE), prefix=fabric.names.prefix, target="embedded", grpc_base=0,
                            run_dir=tmp_path):
            pass
    assert fabric.ping("h1", "h4", count=1).ok, "the running network is untouched"


def test_a_failure_inside_the_network_still_removes_everything(tmp_path: Path) -> None:
    prefix = private_prefix()
    pids: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        with fabric_network(from_parameters(planes=1, spines=1, leaves=1, hosts_per_leaf=1), prefix=prefix,
                            target="embedded", grpc_base=0, run_dir=tmp_path) as fn:
            pids = [sw.proc.pid for sw in fn.p4_switches()]
            assert find_leftovers((prefix,), tmp_path).processes
            raise RuntimeError("boom")
    assert len(pids) == 3  # leaf, spine, NIC
    assert not any(_running(pid) for pid in pids)
    assert not (tmp_path / "network.json").exists()
    assert_nothing_left(prefix, tmp_path)


def test_a_switch_that_dies_at_start_is_reported_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from topologies.p4switch import EmbeddedP4Switch, SwitchError

    monkeypatch.setattr(EmbeddedP4Switch, "log_level", "loud")  # p4target refuses it and exits
    prefix = private_prefix()
    with pytest.raises(SwitchError) as err:
        with fabric_network(from_parameters(planes=1, spines=1, leaves=1, hosts_per_leaf=1), prefix=prefix,
                            target="embedded", grpc_base=0, run_dir=tmp_path):
            pass
    text = str(err.value)
    assert "exited with status 2 while starting" in text
    assert "invalid choice: 'loud'" in text, "the last lines of the switch's log are quoted"
    assert_nothing_left(prefix, tmp_path)


def _cmdline_has(pid: int, *words: str) -> bool:
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return all(any(w in a for a in args) for w in words)


def test_cleanup_finds_everything_a_killed_runner_leaves(tmp_path: Path) -> None:
    """The runner killed with SIGKILL cannot stop anything: tools/cleanup.py (`make clean`)
    must find the switch processes (pid files, node marks) and the root-namespace veths."""
    import signal
    import sys
    import time

    prefix = private_prefix()
    code = ("import time; from pathlib import Path; from fabric.topology import from_parameters; "
            "from topologies.fabric_net import fabric_network\n"
            f"with fabric_network(from_parameters(planes=1, spines=1, leaves=2, hosts_per_leaf=1), prefix={prefix!r}, "
            f"target='embedded', grpc_base=0, run_dir=Path({str(tmp_path)!r})):\n    time.sleep(300)\n")
    runner = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "network.json").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "network.json").exists(), "the network did not start"
        switch_pids = {int(p.read_text()) for p in tmp_path.glob("*.pid")}
        assert len(switch_pids) == 2 + 1 + 2  # leaves, spine, NICs
        # the event collector: the runner's child, run with the run directory
        collector = {int(d.name) for d in Path("/proc").iterdir() if d.name.isdigit()
                     and _cmdline_has(int(d.name), "controller.events", str(tmp_path))}
        assert len(collector) == 1, collector
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        left = find_leftovers((prefix,), directory=tmp_path)
        assert switch_pids | collector <= set(left.processes), left.describe()
        assert f"{prefix}p0l0-eth2" in left.links and f"{prefix}n1-eth1" in left.links, left.describe()
        removed = clean((prefix,), directory=tmp_path)
        assert switch_pids | collector <= set(removed.processes)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        clean((prefix,), directory=tmp_path)
    assert_nothing_left(prefix, tmp_path)
    assert not any(_running(pid) for pid in switch_pids)


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for init to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_an_explicit_graph_from_a_topology_file(tmp_path: Path) -> None:
    """topologies/asymmetric.yaml: leaves of 2, 1 and 3 hosts, leaf1 cabled to spine0 only,
    leaf2 to spine0 in plane 0 only. Only the cables the file names exist; every pair pings."""
    from fabric.topology import load_file
    from topologies.demo import ping_matrix

    prefix = private_prefix()
    topo = load_file(REPO / "topologies" / "asymmetric.yaml")
    try:
        with fabric_network(topo, prefix=prefix, target="embedded", grpc_base=0, run_dir=tmp_path) as fn:
            p = prefix
            # widest leaf has 3 hosts: uplink to spine j is port 4 + j; spine port to leaf i is 1 + i
            assert _peers(f"{p}p1l2-eth5", f"{p}p1s1-eth3")  # leaf2 - spine1, both planes
            assert _peers(f"{p}p0l2-eth4", f"{p}p0s0-eth3")  # leaf2 - spine0, plane 0 only
            existing = {link["ifname"] for link in json.loads(subprocess.run(
                ["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout)}
            assert f"{p}p1l2-eth4" not in existing and f"{p}p1s0-eth3" not in existing
            assert f"{p}p0l1-eth5" not in existing and f"{p}p1l1-eth5" not in existing  # leaf1: spine0 only
            rep = install_tables(fn)
            assert not rep.failed, rep.summary()
            matrix = ping_matrix(fn, count=2)
            assert len(matrix) == 30
            # reachability: every pair answers (one lost echo on a loaded 2-core machine is not a wrong path)
            unreachable = [r.summary() for r in matrix.values() if r.received == 0]
            assert not unreachable, unreachable
            assert sum(r.received for r in matrix.values()) >= 58, [r.summary() for r in matrix.values()]
    finally:
        assert_nothing_left(prefix, tmp_path)
