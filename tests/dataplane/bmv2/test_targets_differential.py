"""fabric.p4 and nic.p4 on the embedded target against the same on BMv2, with the same entries.

One leaf of the dataplane tests' tiny fabric (``p0-leaf0``: host ports 1 and 2,
uplinks 3 and 4 to the two spines) runs twice: as a ``p4target.Switch`` in this
process and as ``simple_switch_grpc`` on four veth pairs (``p4td...``), both filled
with the controller's entries for that leaf (BMv2 over P4Runtime by the controller's
reconciler). The same frames go into both, one at a time: uN towards either spine,
uA, the leaf's local NIC uSIDs, SRH End, plain IPv6, a packet trimmed upstream
(priority 7: BMv2 drops it unless it has priority queues), hop limit 1, unknown
uSIDs, ARP and IPv4, every truncation of a good frame and seeded random corruptions
of good frames. Each frame's outputs must be the same ports with the same bytes in the
same order, and afterwards every counter cell the program has must be equal. A copy
of fabric.p4 that decrements the hop limit by 2 instead of 1, on the embedded side,
must be caught. The same for nic1 of a 2-plane fabric (host port 0, planes on 1 and
2): MRC packets sprayed per packet by EV, plain UDP per flow, the gateway's neighbour
solicitation and ping, a decapsulation towards the host of a whole and of a trimmed
packet, truncations, corruptions; then per-flow UDP while a plane port's peer is
down (the spray group's watch ports) and after it is up again; 64 plain UDP flows of
consecutive source ports spread over both planes alike. A NIC of a GENERATED
mode fabric gets GENERATED EVs over both planes and spines and EVs and destinations
outside the fabric. Trimming under a congested queue, on both, is in
test_priority_queues.py.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from fabric import plan as P
from tests.dataplane.packets import BTH, RETH, mrc_write
from tests.dataplane.bmv2.bmv2_leaf import Bmv2Leaf

pytestmark = [pytest.mark.root, pytest.mark.bmv2]

REPO = Path(__file__).resolve().parents[3]
PORTS = (1, 2, 3, 4)
TRIM_DSCP = 62  # the controller's default trim mark (docs/packet-formats.md)
LEAF = "p0-leaf0"


def _topo():  # the dataplane tests' tiny fabric (tests/dataplane/conftest.py)
    from tests.dataplane.conftest import TINY

    return TINY


@pytest.fixture(scope="module")
def leaves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Bmv2Leaf]]:
    from controller.reconcile import Reconciler
    from tests.dataplane.fabric_net import FABRIC_P4, load, switch_entries

    entries = switch_entries(_topo(), LEAF)
    embedded = load(FABRIC_P4, entries)
    with Bmv2Leaf(tmp_path_factory.mktemp("bmv2-leaf"), PORTS, LEAF) as bmv2:
        rep = asyncio.run(Reconciler([bmv2.target]).run({LEAF: entries}))
        assert not rep.failed and rep.writes == len(entries), rep.summary()
        yield embedded, bmv2


def _mac(port: int) -> str:
    return P.mac_text(P.mac(0, P.LEAF, 0, port))


def _good_frames() -> list[tuple[int, bytes]]:
    """(in port, frame) that fabric.p4 forwards or drops for a reason of its own."""
    inner = IPv6(src="fd00:0:0:1::1", dst="fd00:0:1:2::1") / UDP(sport=4096, dport=4791) / Raw(b"mrc" * 30)
    out: list[tuple[int, bytes]] = []

    def outer(port: int, dst: int, hlim: int = 64, *extra: object) -> bytes:
        pkt = Ether(src="02:00:00:00:aa:01", dst=_mac(port)) / IPv6(src="fd00:1:0:1::1", dst=P.ip(dst), hlim=hlim)
        for layer in extra:
            pkt = pkt / layer
        return bytes(pkt / inner)

    for spine in (0, 1):  # from the NIC on port 1 up to either spine (uN shift)
        out.append((1, outer(1, P.path_carrier(0, 0, spine, 1, 2))))
    for dport in (1, 2):  # from a spine down to the leaf's NICs (local NIC uSID)
        out.append((3, outer(3, P.carrier([P.leaf_usid(0, 0), P.nic_usid(dport)]))))
    out.append((1, outer(1, P.path_carrier(0, 0, None, 0, 2))))  # NIC to NIC on the same leaf
    out.append((2, outer(2, P.carrier([P.leaf_usid(0, 0), P.ua_usid(3), P.leaf_usid(0, 1)]))))  # uA
    out.append((1, outer(1, P.path_carrier(0, 0, 1, 1, 2), 1)))  # hop limit 1
    out.append((1, outer(1, P.carrier([0x0ABC, P.nic_usid(1)]))))  # not this leaf's uSID
    out.append((1, outer(1, P.carrier([P.leaf_usid(0, 0), 0x0ABC]))))  # unknown next uSID
    seg = [P.ip(P.carrier([P.leaf_usid(0, 1), P.nic_usid(1)])), P.ip(P.carrier([P.leaf_usid(0, 0)]))]
    srh = IPv6ExtHdrSegmentRouting(addresses=seg, segleft=1, lastentry=1, nh=41)
    pkt = Ether(src="02:00:00:00:aa:01", dst=_mac(1)) / IPv6(src="fd00:1:0:1::1", dst=seg[1], nh=43) / srh / inner
    out.append((1, bytes(pkt)))  # SRH End at this leaf
    out.append((1, bytes(Ether(src="02:00:00:00:aa:01", dst=_mac(1)) / inner)))  # plain IPv6
    # data an upstream switch trimmed (header only, trim DSCP): priority 7 from dscp_priority
    cut = IPv6(src="fd00:0:0:1::1", dst="fd00:0:1:2::1") / UDP(sport=4096, dport=4791) / BTH(psn=9) / RETH(dma_len=1024)
    out.append((1, bytes(Ether(src="02:00:00:00:aa:01", dst=_mac(1))
                         / IPv6(src="fd00:1:0:1::1", dst=P.ip(P.path_carrier(0, 0, 0, 1, 2)), tc=TRIM_DSCP << 2 | 2)
                         / cut)))
    out.append((2, bytes(Ether(src="02:00:00:00:aa:01", dst="ff:ff:ff:ff:ff:ff") / ARP())))
    out.append((2, bytes(Ether(src="02:00:00:00:aa:01", dst=_mac(2)) / IP(dst="10.0.0.1") / UDP() / Raw(b"x" * 20))))
    return out


def _frames() -> list[tuple[int, bytes]]:
    good = _good_frames()
    rng = random.Random(28)
    out = list(good)
    first = good[0][1]
    out += [(1, first[:n]) for n in (14, 20, 40, 54, 60, 61, 62, 78, 100)]  # truncations
    for _ in range(40):  # seeded corruptions of good frames: 1-3 bytes after the MACs
        port, f = rng.choice(good)
        b = bytearray(f)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(12, min(len(b), 120))] = rng.randrange(256)
        out.append((port, bytes(b)))
    return out


def _compare(embedded: object, bmv2: Bmv2Leaf, frames: list[tuple[int, bytes]]) -> tuple[list, int]:
    bmv2.drain()
    mismatches = []
    forwarded = 0
    for k, (port, frame) in enumerate(frames):
        want = embedded.inject(port, frame)  # type: ignore[attr-defined]
        got = bmv2.inject(port, frame, expect=len(want))
        forwarded += bool(want)
        if [(p, bytes(f)) for p, f in want] != got:
            mismatches.append((k, port, frame[:64].hex(), want, got))
    return mismatches, forwarded


def test_same_outputs_bytes_order_and_counters(leaves: tuple[object, Bmv2Leaf]) -> None:
    embedded, bmv2 = leaves
    mismatches, forwarded = _compare(embedded, bmv2, _frames())
    assert not mismatches, mismatches[:3]
    assert forwarded >= 6, "the good frames are forwarded, so outputs are compared, not only drops"
    assert _same_counters(embedded, bmv2) >= 5


def test_a_different_program_is_caught(leaves: tuple[object, Bmv2Leaf], tmp_path: Path) -> None:
    from tests.dataplane.fabric_net import FABRIC_P4, load, switch_entries

    src = FABRIC_P4.read_text()
    changed = src.replace("hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;", "hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 2;")
    assert changed != src
    variant = tmp_path / "fabric.p4"
    variant.write_text(changed)
    (tmp_path / "include").symlink_to(FABRIC_P4.parent / "include")
    other = load(variant, switch_entries(_topo(), LEAF))
    mismatches, forwarded = _compare(other, leaves[1], _good_frames())
    assert forwarded >= 6 and len(mismatches) >= 5, mismatches


# ---- nic.p4 ---------------------------------------------------------------------

NIC_TOPO_SHAPE = dict(planes=2, spines=1, leaves=2, hosts_per_leaf=1)  # nic1: host port 0, planes on 1 and 2


@contextmanager
def _nic_pair(tmp: Path, topo, tag: str) -> Iterator[tuple[object, Bmv2Leaf]]:
    """nic1 of ``topo`` on both targets, filled with the controller's entries."""
    from controller.reconcile import Reconciler
    from tests.dataplane.fabric_net import NIC_P4, load, switch_entries

    entries = switch_entries(topo, "nic1")
    embedded = load(NIC_P4, entries)
    with Bmv2Leaf(tmp, (0, 1, 2), "nic1", "nic", tag=tag) as bmv2:
        rep = asyncio.run(Reconciler([bmv2.target]).run({"nic1": entries}))
        assert not rep.failed and rep.writes == len(entries), rep.summary()
        yield embedded, bmv2


@pytest.fixture(scope="module")
def nics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Bmv2Leaf, object]]:
    from fabric.topology import from_parameters

    topo = from_parameters(**NIC_TOPO_SHAPE)
    with _nic_pair(tmp_path_factory.mktemp("bmv2-nic"), topo, "n") as (embedded, bmv2):
        yield embedded, bmv2, topo


def _same_counters(embedded: object, bmv2: Bmv2Leaf) -> int:
    """Every counter cell BMv2 has equals the embedded target's; how many are non-zero."""
    from controller.counters import read_switch

    counts = asyncio.run(read_switch(bmv2.target))
    cells = 0
    for name, per_index in counts.items():
        for index, (packets, nbytes) in per_index.items():
            assert tuple(embedded.counter_read(name, index)) == (packets, nbytes), (name, index)  # type: ignore[attr-defined]
            cells += packets > 0
    return cells


def _nic_frames(topo) -> list[tuple[int, bytes]]:
    from scapy.layers.inet6 import ICMPv6EchoRequest, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr

    h1, h2 = topo.host("h1"), topo.host("h2")
    l2 = dict(src=P.mac_text(P.host_mac(h1)), dst=P.mac_text(P.nic_gateway_mac(h1)))
    src, dst = P.ip(P.host_addr(h1.leaf, h1.port)), P.ip(P.host_addr(h2.leaf, h2.port))
    good: list[tuple[int, bytes]] = []
    for e in P.nic_evs(topo, h1, h2)[:8]:  # MRC: sprayed per packet by EV, both planes
        good.append((0, bytes(Ether(**l2) / IPv6(src=src, dst=dst) / mrc_write(e.ev, 1, b"w" * 64))))
    for sport in range(40000, 40006):  # plain UDP: per flow (hash of the 5-tuple)
        good.append((0, bytes(Ether(**l2) / IPv6(src=src, dst=dst) / UDP(sport=sport, dport=5000) / Raw(b"u" * 40))))
    gw = P.ip(P.gateway_addr(h1.leaf, h1.port))
    good.append((0, bytes(Ether(src=l2["src"], dst="33:33:ff:00:00:fe") / IPv6(src=src, dst="ff02::1:ff00:fe", hlim=255)
                          / ICMPv6ND_NS(tgt=gw) / ICMPv6NDOptSrcLLAddr(lladdr=l2["src"]))))  # NS for the gateway
    good.append((0, bytes(Ether(**l2) / IPv6(src=src, dst=gw) / ICMPv6EchoRequest(id=7, seq=1, data=b"p" * 16))))
    # from plane 0: an encapsulated packet for h1, decapsulated to the host
    inner = IPv6(src=dst, dst=src) / UDP(sport=4100, dport=4791) / Raw(b"d" * 48)
    nic_mac = P.mac_text(P.mac(0, P.NIC, 0, 1))
    good.append((1, bytes(Ether(src="02:00:00:00:bb:01", dst=nic_mac)
                          / IPv6(src=P.ip(P.nic_addr(h2.leaf, h2.port)),
                                 dst=P.ip(P.carrier([P.nic_usid(h1.port)]))) / inner)))
    # the same, trimmed on the way (header only, trim DSCP in the outer header): the
    # mark goes into the inner traffic class
    cut = IPv6(src=dst, dst=src) / UDP(sport=4100, dport=4791) / BTH(psn=3) / RETH(dma_len=1024)
    good.append((2, bytes(Ether(src="02:00:00:00:bb:02", dst=P.mac_text(P.mac(1, P.NIC, 0, 1)))
                          / IPv6(src=P.ip(P.nic_addr(h2.leaf, h2.port)), tc=TRIM_DSCP << 2,
                                 dst=P.ip(P.carrier([P.nic_usid(h1.port)]))) / cut)))
    rng = random.Random(28)
    out = list(good)
    out += [(0, good[0][1][:n]) for n in (14, 30, 54, 61, 62, 70)]
    for _ in range(30):
        port, f = rng.choice(good)
        b = bytearray(f)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(12, min(len(b), 100))] = rng.randrange(256)
        out.append((port, bytes(b)))
    return out


def test_nic_same_outputs_bytes_order_and_counters(nics: tuple[object, Bmv2Leaf, object]) -> None:
    embedded, bmv2, topo = nics
    mismatches, forwarded = _compare(embedded, bmv2, _nic_frames(topo))
    assert not mismatches, mismatches[:3]
    assert forwarded >= 12, "MRC and UDP from the host are forwarded, so outputs are compared"
    assert _same_counters(embedded, bmv2) >= 5


def test_nic_per_flow_spreads_64_flows_over_both_planes_on_both(nics: tuple[object, Bmv2Leaf, object]) -> None:
    """64 plain UDP flows, source ports 42000-42063 (consecutive, as a sender numbers
    its flows): each goes out of the same plane port with the same bytes on both
    targets, and the two planes (2 members) share them as a uniform choice would:
    32 each, a standard deviation of 4; the bound is 3 of those (20 to 44 on each)."""
    from collections import Counter

    embedded, bmv2, topo = nics
    h1, h2 = topo.host("h1"), topo.host("h2")
    l2 = dict(src=P.mac_text(P.host_mac(h1)), dst=P.mac_text(P.nic_gateway_mac(h1)))
    src, dst = P.ip(P.host_addr(h1.leaf, h1.port)), P.ip(P.host_addr(h2.leaf, h2.port))
    flows = [(0, bytes(Ether(**l2) / IPv6(src=src, dst=dst) / UDP(sport=sport, dport=5000) / Raw(b"s" * 40)))
             for sport in range(42000, 42064)]
    mismatches, forwarded = _compare(embedded, bmv2, flows)
    assert not mismatches, mismatches[:3]
    assert forwarded == 64
    planes = Counter(port for _, f in flows for port, _ in embedded.inject(0, f))  # type: ignore[attr-defined]
    assert set(planes) == {1, 2} and all(20 <= n <= 44 for n in planes.values()), planes


GENERATED_SHAPE = dict(planes=2, spines=2, leaves=3, hosts_per_leaf=1)  # nic1: leaf 0; spines 0 and 1


@pytest.fixture(scope="module")
def generated_nics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, Bmv2Leaf, object]]:
    from dataclasses import replace

    from fabric.topology import from_parameters

    topo = replace(from_parameters(**GENERATED_SHAPE), ev_mode="generated")
    with _nic_pair(tmp_path_factory.mktemp("bmv2-gen"), topo, "g") as (embedded, bmv2):
        yield embedded, bmv2, topo


def test_nic_generated_evs_same_outputs_bytes_order_and_counters(
        generated_nics: tuple[object, Bmv2Leaf, object]) -> None:
    """GENERATED EVs: the carrier computed from the EV's plane and spine and the
    destination address; EVs and destinations outside the fabric are dropped and counted."""
    embedded, bmv2, topo = generated_nics
    h1 = topo.host("h1")
    l2 = dict(src=P.mac_text(P.host_mac(h1)), dst=P.mac_text(P.nic_gateway_mac(h1)))
    src = P.ip(P.host_addr(h1.leaf, h1.port))
    frames = []
    for dst_leaf in (1, 2):
        dst = P.ip(P.host_addr(dst_leaf, 1))
        for plane, spine, entropy in ((0, 0, 1), (0, 1, 2), (1, 0, 3), (1, 1, 31)):
            ev = P.generated_ev(plane, spine, entropy)
            frames.append((0, bytes(Ether(**l2) / IPv6(src=src, dst=dst) / mrc_write(ev, 1, b"g" * 40))))
    far = P.ip(P.host_addr(5, 1))  # leaf 5 of 3
    for ev, dst in ((P.generated_ev(2, 0, 1), P.ip(P.host_addr(1, 1))),  # plane 2 of 2
                    (P.generated_ev(0, 2, 1), P.ip(P.host_addr(1, 1))),  # spine 2 of 2
                    (P.generated_ev(0, 0, 1), far)):
        frames.append((0, bytes(Ether(**l2) / IPv6(src=src, dst=dst) / mrc_write(ev, 1, b"b" * 40))))
    for sport in range(41000, 41006):  # plain UDP: per flow over set_generated members
        frames.append((0, bytes(Ether(**l2) / IPv6(src=src, dst=P.ip(P.host_addr(2, 1)))
                                / UDP(sport=sport, dport=5000) / Raw(b"f" * 40))))
    mismatches, forwarded = _compare(embedded, bmv2, frames)
    assert not mismatches, mismatches[:3]
    assert forwarded == 8 + 6, "every good frame is forwarded, the three bad ones dropped"
    assert _same_counters(embedded, bmv2) >= 4


def test_nic_watch_port_failover_same_on_both(nics: tuple[object, Bmv2Leaf, object]) -> None:
    """A plane port goes down (carrier lost): the spray group's members that watch it
    are skipped, on both targets; back up, they are used again."""
    embedded, bmv2, topo = nics
    h1, h2 = topo.host("h1"), topo.host("h2")
    l2 = dict(src=P.mac_text(P.host_mac(h1)), dst=P.mac_text(P.nic_gateway_mac(h1)))
    src, dst = P.ip(P.host_addr(h1.leaf, h1.port)), P.ip(P.host_addr(h2.leaf, h2.port))
    flows = [(0, bytes(Ether(**l2) / IPv6(src=src, dst=dst) / UDP(sport=sport, dport=5000) / Raw(b"w" * 40)))
             for sport in range(30000, 30048, 3)]
    mismatches, _ = _compare(embedded, bmv2, flows)
    assert not mismatches, mismatches[:3]
    before = {port for _, f in flows for port, _ in embedded.inject(0, f)}  # type: ignore[attr-defined]
    assert before == {1, 2}, "the flows use both planes while both are up"
    embedded.set_port_status(2, False)  # type: ignore[attr-defined]
    bmv2.set_link(2, False)
    try:
        deadline = time.monotonic() + 10
        while bmv2.inject(*flows[0], expect=1) != embedded.inject(*flows[0]):  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, "BMv2 never saw port 2 go down"
        mismatches, forwarded = _compare(embedded, bmv2, flows)
        assert not mismatches, mismatches[:3]
        assert forwarded == len(flows)
        assert {port for _, f in flows for port, _ in embedded.inject(0, f)} == {1}  # type: ignore[attr-defined]
    finally:
        embedded.set_port_status(2, True)  # type: ignore[attr-defined]
        bmv2.set_link(2, True)
    deadline = time.monotonic() + 10
    while {p for _, f in flows for p, _ in bmv2.inject(0, f, expect=1)} != {1, 2}:
        assert time.monotonic() < deadline, "BMv2 never saw port 2 come back"
    mismatches, _ = _compare(embedded, bmv2, flows)
    assert not mismatches, mismatches[:3]
