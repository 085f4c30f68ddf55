"""The controller against real embedded-target P4Runtime servers on veths.

One fabric (the default shape: 4 planes x 2 leaves x 2 spines, 2 hosts per leaf: 16
fabric switches and 4 NICs, each a ``p4target run --no-p4`` process) serves every test
here, in order: install from scratch and read back, forward in every plane, a second
install writes nothing, a restarted switch is reconciled, a denied link changes only
NIC tables, a failed cable no table, a refused write rolls back, an unreachable switch or an entry that does
not fit the P4Info stops the run before any write.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import threading
import time
from pathlib import Path

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from fabric import plan as P
from controller.codec import codec
from fabric.entries import TableEntry, entries_of, nodes
from controller.errors import EntryError
from controller.targets import SwitchTarget
from controller.p4rt import Session
from controller.reconcile import Reconciler
from fabric.topology import default_topology
from fabric.match import Exact, Ternary
from tests.controller.fabric_lab import REPO, FabricLab
from tests.dataplane.packets import mrc_write
from tests.target.cli.p4t_netlab import recv_frames

pytestmark = pytest.mark.root
TOPO = default_topology()
MRCCTL = REPO / ".venv" / "bin" / "mrcctl"


@pytest.fixture(scope="module")
def lab():
    with FabricLab(TOPO) as lab:
        yield lab


@pytest.fixture
def installed(lab: FabricLab) -> FabricLab:
    """The lab with every table installed (a reconcile: writes only what is missing),
    so a test selected alone (``-k``) finds the state it needs."""
    rep = run(lab, wanted())
    assert not rep.failed, [r.error for r in rep.failed]
    return lab


def wanted(failures=None) -> dict[str, list]:
    from fabric.entries import NO_FAILURES

    return {n.name: entries_of(TOPO, n, failures or NO_FAILURES) for n in nodes(TOPO)}


def run(lab: FabricLab, want: dict, **kw):
    targets = [lab.inventory.switches[n] for n in want]
    return asyncio.run(Reconciler(targets, **kw).run(want))


def read_back(lab: FabricLab, names: list[str]) -> dict[str, set]:
    async def one(t: SwitchTarget) -> set:
        async with Session(t, primary=False) as s:
            return set(await s.read_entries(codec(t.program)))

    async def all_() -> list[set]:
        return await asyncio.gather(*(one(lab.inventory.switches[n]) for n in names))

    return dict(zip(names, asyncio.run(all_()), strict=False))


def canonical(name: str, entries: list) -> set:
    c = codec("nic" if name.startswith("nic") else "fabric")
    return {c.canonical(e) for e in entries}


def host_frame(src, dst, ev: int, payload: bytes = b"mrc-lite" * 8) -> bytes:
    return bytes(Ether(src=P.mac_text(P.host_mac(src)), dst=P.mac_text(P.nic_gateway_mac(src)))
                 / IPv6(src=P.ip(P.host_addr(src.leaf, src.port)), dst=P.ip(P.host_addr(dst.leaf, dst.port)))
                 / mrc_write(ev, 1, payload))


def plane_tx(lab: FabricLab, nic: str) -> dict[int, int]:
    async def go() -> dict[int, int]:
        t = lab.inventory.switches[nic]
        async with Session(t, primary=False) as s:
            cells = await s.read_counter(codec("nic"), "NicEgress.plane_tx")
        return {k: v[0] for k, v in cells.items()}

    return asyncio.run(go())


def test_install_from_scratch_reads_back_every_entry(lab: FabricLab) -> None:
    want = wanted()
    rep = run(lab, want)
    assert not rep.failed, [r.error for r in rep.failed]
    total = sum(len(v) for v in want.values())
    assert rep.writes == total and sum(r.inserted for r in rep.results) == total
    assert all(r.pipeline_pushed for r in rep.results)
    got = read_back(lab, list(want))
    for name, es in want.items():
        assert got[name] == canonical(name, es), name


def test_packets_cross_the_fabric_between_every_pair_in_every_plane(installed: FabricLab, tmp_path: Path) -> None:
    lab = installed
    socks = {h.name: lab.net.socket(lab.host_if[h.name]) for h in TOPO.hosts}
    before = {h.nic: plane_tx(lab, h.nic) for h in TOPO.hosts}
    for src in TOPO.hosts:
        for dst in TOPO.hosts:
            if src == dst:
                continue
            by_plane = {e.plane: e for e in reversed(P.nic_evs(TOPO, src, dst))}
            assert sorted(by_plane) == [0, 1, 2, 3]
            for plane, e in sorted(by_plane.items()):
                tag = b"%s>%s@%d" % (src.name.encode(), dst.name.encode(), plane)
                socks[src.name].send(host_frame(src, dst, e.ev, payload=tag + b"." * 40))
                frames = [Ether(f) for f in recv_frames(socks[dst.name], timeout=5.0, want=1)]
                got = [f for f in frames if UDP in f and f[UDP].dport == 4791]
                assert got, f"nothing arrived at {dst.name} from {src.name} over plane {plane}"
                pkt = got[0]
                assert pkt[IPv6].src == P.ip(P.host_addr(src.leaf, src.port))
                mrc = bytes(pkt[UDP].payload)  # BTH (the EV in pkey, bytes 2-3), RETH, payload
                assert pkt[IPv6].dst == P.ip(P.host_addr(dst.leaf, dst.port)) and mrc[2:4] == e.ev.to_bytes(2, "big")
                assert mrc[28:].startswith(tag)
                assert pkt.dst == P.mac_text(P.host_mac(dst))
    for h in TOPO.hosts:  # 3 destinations x 1 packet per plane, counted by the NIC itself
        after = plane_tx(lab, h.nic)
        assert {p: after.get(p, 0) - before[h.nic].get(p, 0) for p in range(4)} == {0: 3, 1: 3, 2: 3, 3: 3}
    # mrcctl counters reads the same counters over P4Runtime.
    inv = lab.inventory
    inv.path = tmp_path / "network.json"
    inv.save()
    r = subprocess.run([str(MRCCTL), "--state", str(inv.path), "counters", "nic1", "--json"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    rows = {row["plane"]: row for row in json.loads(r.stdout)["nic1"]["ports"]}
    nic1 = plane_tx(lab, "nic1")  # nothing is sent meanwhile: mrcctl must show these cells
    assert {p: rows[p]["tx_packets"] for p in range(4)} == {p: nic1.get(p, 0) for p in range(4)}


def test_second_install_writes_nothing(installed: FabricLab) -> None:
    lab = installed
    rep = run(lab, wanted())
    assert not rep.failed and rep.writes == 0 and not any(r.pipeline_pushed for r in rep.results)
    assert "nothing to change" in rep.summary()


def test_restarted_switch_is_reconciled(installed: FabricLab) -> None:
    lab = installed
    lab.restart("p1-spine0")  # comes back empty, without a pipeline
    assert read_back(lab, ["p0-spine0"])["p0-spine0"]  # the others kept theirs
    want = wanted()
    rep = run(lab, want)
    assert not rep.failed
    by = {r.name: r for r in rep.results}
    assert by["p1-spine0"].pipeline_pushed and by["p1-spine0"].inserted == len(want["p1-spine0"])
    assert sum(r.writes for r in rep.results if r.name != "p1-spine0") == 0
    assert read_back(lab, ["p1-spine0"])["p1-spine0"] == canonical("p1-spine0", want["p1-spine0"])


def test_cli_deny_and_undeny_change_only_nic_tables(installed: FabricLab, tmp_path: Path) -> None:
    lab = installed
    inv = lab.inventory
    inv.path = tmp_path / "network.json"
    inv.save()
    fabric = [n.name for n in nodes(TOPO) if n.program == "fabric"]
    nics = [n.name for n in nodes(TOPO) if n.program == "nic"]
    fabric_before = read_back(lab, fabric)
    nics_before = read_back(lab, nics)
    r = subprocess.run([str(MRCCTL), "--state", str(inv.path), "deny", "p0-leaf0:p0-spine0", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    # Every NIC sprays over plane 0 spine 0: the two on leaf 0 lose it for every
    # destination, the two on leaf 1 for the hosts behind leaf 0 (and explicit EVs).
    assert sorted(report["changed"]) == sorted(nics)
    state = json.loads(inv.path.read_text())
    assert state["denied"] == ["p0-leaf0:p0-spine0"] and state["down"] == []
    assert read_back(lab, fabric) == fabric_before
    nics_failed = read_back(lab, nics)
    assert all(nics_failed[n] != nics_before[n] for n in nics)
    # No EV entry of nic1 (leaf 0) uses plane 0 / spine 0 any more.
    carriers = {dict(e.params)["carrier"] for e in nics_failed["nic1"]
                if isinstance(e, TableEntry) and e.table == "NicIngress.ev_table"}
    assert not any((c >> 64) & 0xFFFF == P.spine_usid(0, 0) for c in carriers)
    r = subprocess.run([str(MRCCTL), "--state", str(inv.path), "undeny", "p0-leaf0:p0-spine0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "4 NICs changed" in r.stdout
    assert read_back(lab, nics) == nics_before and read_back(lab, fabric) == fabric_before
    assert json.loads(inv.path.read_text())["denied"] == []


def test_cli_fail_and_restore_write_no_table(installed: FabricLab, tmp_path: Path) -> None:
    """A failed cable is the endpoints' business: no switch table changes."""
    lab = installed
    inv = lab.inventory
    inv.path = tmp_path / "network.json"
    inv.save()
    names = [n.name for n in nodes(TOPO)]
    before = read_back(lab, names)
    assert all(before[n] for n in names)  # installed: there is something to change
    r = subprocess.run([str(MRCCTL), "--state", str(inv.path), "fail", "p0-leaf0:p0-spine0", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["changed"] == [] and report["writes"] == 0
    assert report["cable"] == "no running network: the cable is not touched"  # veths, no Mininet network
    state = json.loads(inv.path.read_text())
    assert state["down"] == ["p0-leaf0:p0-spine0"] and state["denied"] == []
    assert read_back(lab, names) == before
    links = json.loads(subprocess.run([str(MRCCTL), "--state", str(inv.path), "links", "--json"],
                                      capture_output=True, text=True, timeout=60).stdout)
    assert [(x["link"], x["up"], x["denied"]) for x in links if not x["up"] or x["denied"]] == [
        ("p0-leaf0:p0-spine0", False, False)]
    # The install an operator runs next keeps the NICs' entries: a cable is not a denial.
    r = subprocess.run([str(MRCCTL), "--state", str(inv.path), "install", "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "nothing to change" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([str(MRCCTL), "--state", str(inv.path), "restore", "p0-leaf0:p0-spine0"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "no table written" in r.stdout
    assert json.loads(inv.path.read_text())["down"] == []
    assert read_back(lab, names) == before


def test_refused_write_rolls_back_the_whole_run(lab: FabricLab) -> None:
    lab.restart("p2-leaf1")
    lab.restart("p3-leaf0")
    want = wanted()
    # A ternary entry without a priority passes the controller's P4Info checks, but a
    # P4Runtime server must refuse it (P4Runtime 9.1: priority is required).
    want["p3-leaf0"] = list(want["p3-leaf0"]) + [
        TableEntry("FabricIngress.dscp_priority", (("hdr.ipv6.traffic_class", Ternary(0x20, 0xFC)),),
                   "FabricIngress.set_priority", (("prio", 3),), 0)]
    rep = run(lab, {k: want[k] for k in ("p2-leaf1", "p3-leaf0")}, parallel=1)
    assert [r.name for r in rep.failed] == ["p3-leaf0"]
    err = rep.failed[0].error
    assert err.startswith("p3-leaf0 (127.0.0.1:") and "INVALID_ARGUMENT" in err
    assert rep.rolled_back
    got = read_back(lab, ["p2-leaf1", "p3-leaf0"])
    assert got == {"p2-leaf1": set(), "p3-leaf0": set()}
    rep = run(lab, wanted())  # and a good run puts everything back
    assert not rep.failed


def test_unreachable_switch_stops_before_any_write(lab: FabricLab) -> None:
    lab.restart("p0-leaf1")
    want = wanted()
    targets = [lab.inventory.switches["p0-leaf1"], SwitchTarget("p0-spine1", "127.0.0.1:1", 99, "fabric")]
    rep = asyncio.run(Reconciler(targets).run({k: want[k] for k in ("p0-leaf1", "p0-spine1")}))
    assert [r.name for r in rep.failed] == ["p0-spine1"]
    assert rep.failed[0].error.startswith("p0-spine1 (127.0.0.1:1, device 99): ")
    assert rep.writes == 0
    with pytest.raises(Exception):  # noqa: B017 — any failure of the read will do: there is no pipeline to read
        read_back(lab, ["p0-leaf1"])  # still no pipeline: nothing was pushed either
    # --keep-going installs what it can and lists what failed.
    rep = asyncio.run(Reconciler(targets, keep_going=True).run({k: want[k] for k in ("p0-leaf1", "p0-spine1")}))
    assert [r.name for r in rep.failed] == ["p0-spine1"] and rep.writes == len(want["p0-leaf1"])
    assert read_back(lab, ["p0-leaf1"])["p0-leaf1"] == canonical("p0-leaf1", want["p0-leaf1"])
    assert not run(lab, wanted()).failed


def test_entry_that_does_not_fit_stops_the_run_before_any_write(installed: FabricLab) -> None:
    lab = installed
    lab.restart("p1-leaf0")  # empty, without a pipeline
    want = wanted()
    assert read_back(lab, ["p1-spine1"])["p1-spine1"] == canonical("p1-spine1", want["p1-spine1"])
    bad = TableEntry("FabricEgress.port_mac", (("standard_metadata.egress_port", Exact(512)),),
                     "FabricEgress.set_src_mac", (("mac", 1),))
    targets = [lab.inventory.switches["p1-leaf0"], lab.inventory.switches["p1-spine1"],
               SwitchTarget("p1-spine9", "127.0.0.1:1", 99, "fabric")]  # unreachable: its probe is given up
    run_want = {"p1-leaf0": want["p1-leaf0"], "p1-spine1": [*want["p1-spine1"], bad], "p1-spine9": want["p1-spine1"]}
    with pytest.raises(EntryError, match=r"^FabricEgress.port_mac: standard_metadata.egress_port=0x200 does not "
                                         r"fit 9 bits$"):
        asyncio.run(Reconciler(targets).run(run_want))
    with pytest.raises(Exception):  # noqa: B017 — any failure of the read will do: there is no pipeline to read
        read_back(lab, ["p1-leaf0"])  # no pipeline pushed
    assert read_back(lab, ["p1-spine1"])["p1-spine1"] == canonical("p1-spine1", want["p1-spine1"])
    assert not run(lab, wanted()).failed


def _lines_until(lines: "queue.Queue[str | None]", seen: list[str], prefix: str, within: float) -> None:
    """Read the watch's output into ``seen`` until a line starts with ``prefix``; fail
    with what it printed if the line does not come ``within`` seconds or it exits."""
    deadline = time.monotonic() + within
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"no line starting {prefix!r} within {within:g} s; the watch printed {seen}")
        if line is None:
            pytest.fail(f"the watch exited before printing {prefix!r}; it printed {seen}")
        seen.append(line)
        if line.startswith(prefix):
            return


def test_install_watch_reconciles_a_switch_that_comes_back(installed: FabricLab, tmp_path: Path) -> None:
    lab = installed
    inv = lab.inventory
    inv.path = tmp_path / "network.json"
    inv.save()
    proc = subprocess.Popen([str(MRCCTL), "--state", str(inv.path), "install", "--watch"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        seen: list[str] = []
        _lines_until(lines, seen, "watch: keeping", 120)
        assert seen[0].startswith("install: 20 switches"), seen
        lab.restart("nic2")  # back empty, without a pipeline
        _lines_until(lines, seen, "watch: nic2: ", 120)
        assert "1 pipelines pushed" in seen[-1] and "inserted" in seen[-1], seen
        want = wanted()["nic2"]
        assert read_back(lab, ["nic2"])["nic2"] == canonical("nic2", want)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_cli_errors_are_one_line(lab: FabricLab, tmp_path: Path) -> None:
    inv = lab.inventory
    state = tmp_path / "network.json"
    data = {"topology": {"parameters": {}},
            "switches": {n: {"name": t.name, "address": t.address, "device_id": t.device_id, "program": t.program}
                         for n, t in inv.switches.items()}}
    data["switches"]["p0-spine1"]["address"] = "127.0.0.1:1"
    state.write_text(json.dumps(data))
    r = subprocess.run([str(MRCCTL), "--state", str(state), "install"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    errors = r.stderr.strip().splitlines()
    assert errors[0].startswith("mrcctl: p0-spine1 (127.0.0.1:1, device 4): "), r.stderr
    assert errors[-1] == "mrcctl: nothing was written (every switch is checked before the first write)"
    r = subprocess.run([str(MRCCTL), "--state", str(state), "entries", "p9-leaf0"], capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("mrcctl: error: no switch 'p9-leaf0'") and r.stderr.count("\n") == 1
    r = subprocess.run([str(MRCCTL), "--state", str(state), "fail", "p0-leaf0:p1-spine0"], capture_output=True, text=True)
    assert r.returncode == 1 and "no link 'p0-leaf0:p1-spine0'" in r.stderr and r.stderr.count("\n") == 1
