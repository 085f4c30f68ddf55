"""The product on real BMv2: the fabric in Mininet with ``simple_switch_grpc`` switches.

One small network (2 planes x (2 leaves + 2 spines), 1 host per leaf: 4 leaves, 4
spines, 2 NICs, 2 hosts, each switch a ``simple_switch_grpc`` process running
p4c-bm2-ss's JSON) is started for the module under a private node prefix, programmed
by the controller, and shared by the tests in order: pings, checksums as the
receiving host sees them, an MRC-lite transfer, per-plane counters, ``mrcctl``'s
reconcile (a second run writes nothing; a killed switch gets its pipeline and entries
back), ``fail``/``restore``. Skipped without BMv2 on the PATH (``bmv2`` marker).

BMv2's P4Runtime server (PI) reads every member of a selector group back with the
watch port of the group's last member and fails the MODIFY of a group whose members
change: the controller compares groups there without watch ports and remakes a
changed group (delete, insert), which the second install and ``deny`` exercise.
A leaf restarted with ``--queue-rate`` gets it over BMv2's Thrift API and trims.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabric.topology import from_parameters
from tests.mininet.net_prefix import assert_nothing_left, private_prefix

pytestmark = [pytest.mark.root, pytest.mark.bmv2]
pytest.importorskip("mininet.net")

from topologies.fabric_net import FabricNetwork, install_tables, programmed_network  # noqa: E402

SHAPE = dict(planes=2, spines=2, leaves=2, hosts_per_leaf=1)
REPO = Path(__file__).resolve().parents[2]
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FabricNetwork]:
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces, veths, Mininet): run `make test` as root")
    prefix = private_prefix()
    run_dir = tmp_path_factory.mktemp("bmv2-run")
    try:
        with programmed_network(from_parameters(**SHAPE), prefix=prefix, run_dir=run_dir, target="bmv2") as fn:
            yield fn
    finally:
        assert_nothing_left(prefix, run_dir)


def test_every_switch_is_bmv2_and_every_pair_pings(fabric: FabricNetwork) -> None:
    from topologies.demo import ping_matrix

    assert {sw.target for sw in fabric.p4_switches()} == {"bmv2"}
    assert all(Path(sw.command()[0]).name == "simple_switch_grpc" for sw in fabric.p4_switches())
    # the command line of one switch, written out: device id, Thrift port, each port's
    # interface, the JSON p4c-bm2-ss made, after "--" the gRPC address and 8 priority queues
    leaf = fabric.switch("p0-leaf0")
    cmd = leaf.command()
    p = fabric.names.mininet("p0-leaf0")
    assert cmd[1:5] == ["--device-id", str(leaf.device_id), "--thrift-port", str(leaf.thrift_port)]
    assert " -i 1@%s-eth1 -i 2@%s-eth2 -i 3@%s-eth3 " % (p, p, p) in " ".join(cmd)
    assert cmd[-6:] == [str(REPO / "build" / "bmv2" / "fabric.json"), "--", "--grpc-server-addr", leaf.grpc_addr,
                        "--priority-queues", "8"]
    assert f"--notifications-addr ipc://{leaf.run_dir / (p + '.ipc')}" in " ".join(cmd)
    matrix = ping_matrix(fabric, count=2)
    assert sorted(matrix) == [("h1", "h2"), ("h2", "h1")]
    assert all(r.ok for r in matrix.values()), [r.summary() for r in matrix.values()]


def test_packets_arrive_at_the_receiving_host_with_correct_checksums(fabric: FabricNetwork) -> None:
    from tests.mininet.host_capture import checksums_ok, exchange

    got = exchange(fabric.host("h1"), fabric.host("h2"), fabric.address("h1"), fabric.address("h2"))
    kinds = [checksums_ok(f) for f in got["frames"]]
    assert {k for k, _ in kinds} == {"UDP", "TCP"}, kinds
    assert all(ok for _, ok in kinds), kinds
    assert got["udp"] == "udp checksum probe " * 20 and got["tcp"] == "tcp checksum probe " * 20 + "END"


def test_an_mrc_lite_transfer_verifies_every_byte_over_both_planes(fabric: FabricNetwork, tmp_path: Path) -> None:
    from controller.counters import delta, read_all
    from topologies.transfer import run_transfer

    nics = [fabric.inventory.switches[n] for n in ("nic1", "nic2")]
    before = asyncio.run(read_all(nics))
    res = run_transfer(fabric, "h1", "h2", 200_000, tmp_path, send_args=["--rate", "500"], timeout=60)
    assert res.ok, res.summary()
    sent = res.sender["packets_sent"]
    diff = delta(asyncio.run(read_all(nics)), before)
    tx = {p: v[0] for p, v in diff["nic1"]["NicEgress.plane_tx"].items()}
    # the sender's data packets and probes all leave h1 through nic1 into the two planes
    assert sum(tx.values()) >= sent and min(tx.values()) > 0.3 * sum(tx.values()), tx


def _mrcctl(fabric: FabricNetwork, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MRCCTL), "--state", str(fabric.state_path), *args], capture_output=True, text=True,
                          timeout=timeout)


def _fabric_tables(fabric: FabricNetwork) -> dict[str, set]:
    from controller.codec import codec
    from controller.p4rt import Session

    async def one(name: str) -> tuple[str, set]:
        t = fabric.inventory.switches[name]
        async with Session(t, primary=False) as s:
            return name, set(await s.read_entries(codec(t.program, t.target)))

    async def all_() -> dict[str, set]:
        return dict(await asyncio.gather(*(one(n) for n in fabric.inventory.switches)))

    return asyncio.run(all_())


def test_counters_and_watch_read_bmv2s_counters(fabric: FabricNetwork) -> None:
    from fabric import plan as P
    from topologies.mrc_flow import run_stream

    s, d = fabric.topo.host("h1"), fabric.topo.host("h2")
    r = _mrcctl(fabric, "counters", "nic1", "--json")
    assert r.returncode == 0, r.stderr
    before = json.loads(r.stdout)["nic1"]["ports"]
    got = run_stream(fabric, "h1", "h2", [e.ev for e in P.nic_evs(fabric.topo, s, d)], 40, 400)
    assert (got["sent"], got["received"]) == (40, 40)
    r = _mrcctl(fabric, "counters", "nic1", "--json")
    assert r.returncode == 0, r.stderr
    after = json.loads(r.stdout)["nic1"]["ports"]
    tx = {row["plane"]: row["tx_packets"] for row in after}
    tx0 = {row["plane"]: row["tx_packets"] for row in before}
    # 40 of the 64 EVs, EV k on plane k mod 2, one packet per EV: 20 per plane (a plane
    # that has sent nothing yet has no row: mrcctl lists the cells that are not zero)
    assert {p: tx[p] - tx0.get(p, 0) for p in (0, 1)} == {0: 20, 1: 20}
    # watch: one sample over 10 s, while 200 packets (100 per plane) are sent in it: the
    # stream starts once the command says its first read of every switch's counters is done
    watch = subprocess.Popen([str(MRCCTL), "--state", str(fabric.state_path), "watch", "--once", "--interval", "10",
                              "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watch.stderr is not None
        ready, _, _ = select.select([watch.stderr], [], [], 60)
        first = watch.stderr.readline() if ready else ""
        assert first.startswith("mrcctl watch: first counters read from 10 switches; sampling for 10 s"), first
        got = run_stream(fabric, "h1", "h2", [e.ev for e in P.nic_evs(fabric.topo, s, d)][:50], 200, 400)
        assert (got["sent"], got["received"]) == (200, 200)
        stdout, stderr = watch.communicate(timeout=30)
    finally:
        watch.kill()
        watch.wait()
    assert watch.returncode == 0, stderr
    data = json.loads(stdout)
    # 50 EVs, EV k on plane k mod 2, four packets each: 100 per plane (give or take a
    # neighbour solicitation), as packets/s over the sample
    per_plane = {p: v * data["interval"] for p, v in data["planes"].items()}
    assert sorted(per_plane) == ["0", "1"] and all(99 <= n <= 104 for n in per_plane.values()), data
    up = {row["link"]: row["up_pps"] * data["interval"] for row in data["links"] if row["up_pps"]}
    # h1's leaf sends them up to the spines of both planes: 100 per plane over its 2 spines
    for plane in (0, 1):
        mine = {k: v for k, v in up.items() if k.startswith(f"p{plane}-leaf0:")}
        assert len(mine) == 2 and 99 <= sum(mine.values()) <= 104, (plane, up)


def test_mrcctl_install_again_writes_nothing(fabric: FabricNetwork) -> None:
    r = _mrcctl(fabric, "install")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing to change" in r.stdout, r.stdout


def test_a_killed_simple_switch_grpc_gets_its_pipeline_and_entries_back(fabric: FabricNetwork) -> None:
    from controller.codec import codec
    from fabric.entries import NO_FAILURES, entries_of, nodes

    want = {n.name: entries_of(fabric.topo, n, NO_FAILURES) for n in nodes(fabric.topo)}
    tables = _fabric_tables(fabric)
    spine = fabric.switch("p1-spine0")
    old = spine.proc.pid
    spine.proc.kill()
    spine.proc.wait(timeout=10)
    with pytest.raises(Exception, match="p1-spine0 .* was killed by SIGKILL"):
        fabric.check_switches()
    spine.restart()
    assert spine.alive and spine.proc.pid != old
    r = _mrcctl(fabric, "install", "--json")  # as an operator reconciles it
    assert r.returncode == 0, r.stdout + r.stderr
    by = {row["name"]: row for row in json.loads(r.stdout)["switches"]}
    assert by["p1-spine0"]["pipeline_pushed"] and by["p1-spine0"]["inserted"] == len(want["p1-spine0"])
    assert by["p1-spine0"]["modified"] == 0
    # nothing else is written, the NICs' spray groups included
    assert sum(row[k] for name, row in by.items() if name != "p1-spine0"
               for k in ("inserted", "modified", "deleted")) == 0, by
    again = _mrcctl(fabric, "install")
    assert again.returncode == 0 and "nothing to change" in again.stdout, again.stdout + again.stderr
    assert _fabric_tables(fabric) == tables
    c = codec("fabric", "bmv2")
    assert tables["p1-spine0"] == {c.canonical(e) for e in want["p1-spine0"]}
    assert fabric.ping("h1", "h2", count=2).ok


def test_fail_and_restore_take_only_the_cable(fabric: FabricNetwork) -> None:
    """On BMv2 the cut keeps the carrier (nothing sent crosses the cable): a BMv2 switch
    stops forwarding on every port once one of its interfaces goes down, and does not
    recover when it is up again, so a carrier cut would kill the whole leaf."""
    from fabric import plan as P
    from topologies.mrc_flow import run_stream

    tables = _fabric_tables(fabric)
    link = "p0-leaf0:p0-spine0"
    s, d = fabric.topo.host("h1"), fabric.topo.host("h2")
    evs = P.nic_evs(fabric.topo, s, d)
    crossing = [e.ev for e in evs if e.plane == 0 and e.spine == 0]
    others = [e.ev for e in evs if not (e.plane == 0 and e.spine == 0)]
    assert crossing and others
    r = _mrcctl(fabric, "fail", link)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        assert "no table written" in r.stdout and "carrier kept" in r.stdout, r.stdout
        assert _fabric_tables(fabric) == tables  # neither the fabric's nor the NICs'
        # none may arrive: the receiver waits 5 s for them (BMv2 delivers in milliseconds),
        # not the 60 s it gives a stream that is expected
        assert run_stream(fabric, "h1", "h2", crossing, len(crossing), 400, timeout=10)["received"] == 0
        assert run_stream(fabric, "h1", "h2", others, 4 * len(others), 400)["received"] == 4 * len(others)
    finally:
        r = _mrcctl(fabric, "restore", link)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _fabric_tables(fabric) == tables
    # the same leaf and spine forward again over the restored cable
    assert run_stream(fabric, "h1", "h2", crossing, 4 * len(crossing), 400)["received"] == 4 * len(crossing)


def test_deny_and_undeny_rewrite_only_the_nics(fabric: FabricNetwork) -> None:
    from fabric import plan as P
    from topologies.mrc_flow import run_stream

    tables = _fabric_tables(fabric)
    fabric_names = [n for n in tables if not n.startswith("nic")]
    link = "p0-leaf0:p0-spine0"
    r = _mrcctl(fabric, "deny", link)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        after = _fabric_tables(fabric)
        assert {n: after[n] for n in fabric_names} == {n: tables[n] for n in fabric_names}
        assert after["nic1"] != tables["nic1"]
        fabric.reload_inventory()
        s, d = fabric.topo.host("h1"), fabric.topo.host("h2")
        evs = P.nic_evs(fabric.topo, s, d)
        got = run_stream(fabric, "h1", "h2", [e.ev for e in evs], 64, 400)
        assert got["received"] == 64, got  # every EV was moved off the dead link
    finally:
        r = _mrcctl(fabric, "undeny", link)
        fabric.reload_inventory()
    assert r.returncode == 0, r.stdout + r.stderr
    assert _fabric_tables(fabric) == tables


def _trimmed(fabric: FabricNetwork, leaf: str, port: int) -> int:
    from controller.counters import read_all

    got = asyncio.run(read_all([fabric.inventory.switches[leaf]], election_id=5))
    return got[leaf].get("FabricEgress.trimmed", {}).get(port, (0, 0))[0]


def test_a_queue_rate_set_over_thrift_makes_the_leaf_trim(fabric: FabricNetwork) -> None:
    """The same burst of 64 packets over plane 0 (even EVs) into h2's leaf: without a
    queue rate BMv2 keeps up and trims nothing; restarted with ``--queue-rate`` 100
    packets/s on the port to h2 (set over Thrift) its queue passes the trimming
    threshold (32 packets) and packets are trimmed."""
    from fabric import plan as P
    from topologies.mrc_flow import run_stream

    s, d = fabric.topo.host("h1"), fabric.topo.host("h2")
    plane0 = [e.ev for e in P.nic_evs(fabric.topo, s, d) if e.ev % 2 == 0]
    leaf, port = f"p0-leaf{d.leaf}", d.port
    sw = fabric.switch(leaf)

    def burst() -> int:
        before = _trimmed(fabric, leaf, port)
        run_stream(fabric, "h1", "h2", plane0 * 2, 64, 2000, timeout=8)
        return _trimmed(fabric, leaf, port) - before

    assert burst() == 0
    try:
        sw.extra_args = ["--queue-rate", f"{port}=100"]
        sw.restart()
        rep = install_tables(fabric)
        assert not rep.failed, rep.summary()
        assert burst() > 0
    finally:
        sw.extra_args = []
        sw.restart()
        assert not install_tables(fabric).failed
