"""fabric.p4 uSID forwarding: uN, uA, local NIC uSIDs, plain IPv6, and their drops.

Every test sends real scapy frames through fabric.p4 on the embedded target, with
the controller's entries (fabric/entries.py, through tests/dataplane/fabric_net.py),
and compares the exact output bytes with a frame built independently from the path.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from tests.dataplane.fabric.fabric_checks import (
    DROP_HOP_LIMIT,
    DROP_NO_PORT_MAC,
    DROP_NO_ROUTE,
    DROP_NOT_FOR_ME,
    DROP_NOT_IPV6,
    DROP_UNKNOWN_USID,
    EGRESS_DROPS,
    RX_PORT,
    TX_PORT,
    Count,
    counter,
    drops,
)
from tests.dataplane.packets import L2, encapsulated, frame, ipv6, mrc_write, usid_carrier
from fabric.plan import LEAF, NIC, SPINE
from fabric.topology import Topology
from fabric.match import Exact, Lpm
from tests.dataplane.fabric_net import entry, mac, switch_entries, walk

PLANE = 0
L0, L1 = 0x0100, 0x0101            # leaves 0 and 1 of plane 0
S0, S1 = 0x0300, 0x0301            # spines 0 and 1 of plane 0
HOST_A = "fd00:0:0:1::1"           # leaf 0 port 1
HOST_B = "fd00:0:1:2::1"           # leaf 1 port 2
NIC_A = "fd00:1:0:1::1"


def inner_packet(psn: int = 7) -> IPv6:
    return ipv6(HOST_A, HOST_B) / mrc_write(ev=0x1234, psn=psn, payload=bytes(range(64)))


def outer(l2: L2, da: str, hlim: int, inner: IPv6) -> bytes:
    return bytes(encapsulated(l2, NIC_A, da, inner, hlim=hlim, fl=0x1234))


def test_carrier_walks_leaf_spine_leaf_to_the_nic(tiny_fabric: Topology, tiny_switches) -> None:
    """Host A (leaf 0, port 1) to host B (leaf 1, port 2) via spine 1: every hop exact."""
    inner = inner_packet()
    nic_a_mac = mac(PLANE, NIC, 0, 1)
    sent = outer(L2(nic_a_mac, mac(PLANE, LEAF, 0, 1)), usid_carrier([L0, S1, L1, 0xE002]), 64, inner)
    leaf0, spine1, leaf1 = "p0-leaf0", "p0-spine1", "p0-leaf1"

    hops = walk(tiny_fabric, tiny_switches, leaf0, 1, sent)

    assert [(h.node, h.port) for h in hops] == [(leaf0, 4), (spine1, 2), (leaf1, 2)]
    expected = [
        outer(L2(mac(PLANE, LEAF, 0, 4), mac(PLANE, SPINE, 1, 1)), usid_carrier([S1, L1, 0xE002]), 63, inner),
        outer(L2(mac(PLANE, SPINE, 1, 2), mac(PLANE, LEAF, 1, 4)), usid_carrier([L1, 0xE002]), 62, inner),
        outer(L2(mac(PLANE, LEAF, 1, 2), mac(PLANE, NIC, 3, 1)), usid_carrier([0xE002]), 61, inner),
    ]
    for hop, want in zip(hops, expected, strict=False):
        assert hop.frame == want, f"{hop.node} port {hop.port}:\n{Ether(hop.frame).show2(dump=True)}"
        got = Ether(hop.frame)
        assert got[IPv6].dst == Ether(want)[IPv6].dst
    # Counters: one frame in and one out at each switch, no drops.
    n = len(sent)
    assert counter(tiny_switches[leaf0], RX_PORT, 1) == Count(1, n)
    assert counter(tiny_switches[leaf0], TX_PORT, 4) == Count(1, n)
    assert counter(tiny_switches[spine1], RX_PORT, 1) == Count(1, n)
    assert counter(tiny_switches[spine1], TX_PORT, 2) == Count(1, n)
    assert counter(tiny_switches[leaf1], RX_PORT, 4) == Count(1, n)
    assert counter(tiny_switches[leaf1], TX_PORT, 2) == Count(1, n)
    for sw in tiny_switches.values():
        assert drops(sw) == {}
        assert drops(sw, EGRESS_DROPS) == {}


def test_same_leaf_path_delivers_local_usid_unshifted(tiny_fabric: Topology, tiny_switches) -> None:
    inner = inner_packet()
    leaf0 = "p0-leaf0"
    sent = outer(L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1)), usid_carrier([L0, 0xE002]), 9, inner)
    hops = walk(tiny_fabric, tiny_switches, leaf0, 1, sent)
    assert [(h.node, h.port) for h in hops] == [(leaf0, 2)]
    assert hops[0].frame == outer(
        L2(mac(PLANE, LEAF, 0, 2), mac(PLANE, NIC, 1, 1)), usid_carrier([0xE002]), 8, inner
    )


def test_shift_keeps_the_block_regression(fabric_switch_factory, tiny_fabric: Topology) -> None:
    """At the owner of uSID 0x0100: fcbb:bb00:100:200:300:e001:: -> fcbb:bb00:200:300:e001::.

    Guards against masking the active uSID before shifting (which loses the block
    or leaves the old uSID in place).
    """
    extra = entry("FabricIngress.usid_fwd", {"hdr.ipv6.dst_addr": Lpm(0xFCBB_BB00_0200 << 80, 48)},
                  "FabricIngress.fwd", {"port": 3, "dmac": 0x02AABBCCDDEE})
    sw = fabric_switch_factory(switch_entries(tiny_fabric, "p0-leaf0") + [extra])
    inner = inner_packet()
    sent = outer(L2("02:00:00:00:00:99", mac(PLANE, LEAF, 0, 1)), "fcbb:bb00:100:200:300:e001::", 64, inner)
    out = sw.inject(1, sent)
    assert len(out) == 1
    port, data = out[0]
    assert port == 3
    assert Ether(data)[IPv6].dst == "fcbb:bb00:200:300:e001::"
    assert data == outer(L2(mac(PLANE, LEAF, 0, 3), "02:aa:bb:cc:dd:ee"),
                         "fcbb:bb00:200:300:e001::", 63, inner)


def test_ua_pins_the_uplink_then_transit_spine_forwards_unshifted(
        tiny_fabric: Topology, tiny_switches) -> None:
    """uA 0xF004 at leaf 0 sends on port 4 (spine 1); spine 1 is transit for leaf 1's uSID."""
    inner = inner_packet()
    leaf0, spine1, leaf1 = "p0-leaf0", "p0-spine1", "p0-leaf1"
    sent = outer(L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1)),
                 usid_carrier([L0, 0xF004, L1, 0xE001]), 64, inner)
    hops = walk(tiny_fabric, tiny_switches, leaf0, 1, sent)
    assert [(h.node, h.port) for h in hops] == [(leaf0, 4), (spine1, 2), (leaf1, 1)]
    assert hops[0].frame == outer(L2(mac(PLANE, LEAF, 0, 4), mac(PLANE, SPINE, 1, 1)),
                                  usid_carrier([L1, 0xE001]), 63, inner)
    assert hops[1].frame == outer(L2(mac(PLANE, SPINE, 1, 2), mac(PLANE, LEAF, 1, 4)),
                                  usid_carrier([L1, 0xE001]), 62, inner)
    assert hops[2].frame == outer(L2(mac(PLANE, LEAF, 1, 1), mac(PLANE, NIC, 2, 1)),
                                  usid_carrier([0xE001]), 61, inner)


@pytest.fixture
def leaf0_switch(fabric_switch_factory, tiny_fabric: Topology):
    return fabric_switch_factory(switch_entries(tiny_fabric, "p0-leaf0"))


def send_one(sw, da: str, hlim: int = 64, port: int = 1) -> tuple[bytes, list]:
    sent = outer(L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1)), da, hlim, inner_packet())
    return sent, sw.inject(port, sent)


def test_unknown_usid_is_dropped_and_counted(leaf0_switch) -> None:
    sent, out = send_one(leaf0_switch, usid_carrier([L0, 0x0999, 0xE001]))
    assert out == []
    assert drops(leaf0_switch) == {DROP_UNKNOWN_USID: 1}
    assert counter(leaf0_switch, "FabricIngress.drops", DROP_UNKNOWN_USID) == Count(1, len(sent))
    assert counter(leaf0_switch, RX_PORT, 1) == Count(1, len(sent))
    assert counter(leaf0_switch, TX_PORT, 3) == Count(0, 0)


def test_carrier_ending_at_a_transit_switch_is_dropped(leaf0_switch) -> None:
    """The active uSID is mine and nothing follows: not for transit."""
    _, out = send_one(leaf0_switch, usid_carrier([L0]))
    assert out == []
    assert drops(leaf0_switch) == {DROP_NOT_FOR_ME: 1}


@pytest.mark.parametrize("hlim", [0, 1])
def test_hop_limit_expired_at_un(leaf0_switch, hlim: int) -> None:
    _, out = send_one(leaf0_switch, usid_carrier([L0, S0, L1, 0xE001]), hlim=hlim)
    assert out == []
    assert drops(leaf0_switch) == {DROP_HOP_LIMIT: 1}


@pytest.mark.parametrize("hlim", [0, 1])
def test_hop_limit_expired_in_transit(leaf0_switch, hlim: int) -> None:
    _, out = send_one(leaf0_switch, usid_carrier([S0, L1, 0xE001]), hlim=hlim)
    assert out == []
    assert drops(leaf0_switch) == {DROP_HOP_LIMIT: 1}


def test_hop_limit_two_still_leaves_with_one(leaf0_switch) -> None:
    _, out = send_one(leaf0_switch, usid_carrier([L0, S0, L1, 0xE001]), hlim=2)
    assert [(p, Ether(d)[IPv6].hlim, Ether(d)[IPv6].dst) for p, d in out] == [
        (3, 1, usid_carrier([S0, L1, 0xE001]))]


def test_no_route_outside_the_block(leaf0_switch) -> None:
    _, out = send_one(leaf0_switch, "fd00:99::1")
    assert out == []
    assert drops(leaf0_switch) == {DROP_NO_ROUTE: 1}


def test_plain_ipv6_lpm_routing(fabric_switch_factory, tiny_fabric: Topology) -> None:
    """Non-SRv6 traffic follows ipv6_route: longest prefix wins, hop limit decremented."""
    routes = [
        entry("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(int.from_bytes(bytes.fromhex("fd000001" + "00" * 12), "big"), 32)},
              "FabricIngress.fwd", {"port": 3, "dmac": 0x020000000303}),
        entry("FabricIngress.ipv6_route", {"hdr.ipv6.dst_addr": Lpm(int.from_bytes(bytes.fromhex("fd0000010001" + "00" * 10), "big"), 48)},
              "FabricIngress.fwd", {"port": 4, "dmac": 0x020000000404}),
    ]
    sw = fabric_switch_factory(switch_entries(tiny_fabric, "p0-leaf0") + routes)
    payload = UDP(sport=1000, dport=2000) / b"hello"
    for dst, port, dmac in [("fd00:1:1::5", 4, "02:00:00:00:04:04"), ("fd00:1:2::5", 3, "02:00:00:00:03:03")]:
        sent = bytes(frame(L2("02:00:00:00:00:99", mac(PLANE, LEAF, 0, 1)), ipv6(NIC_A, dst, hlim=10), payload))
        out = sw.inject(1, sent)
        want = bytes(frame(L2(mac(PLANE, LEAF, 0, port), dmac), ipv6(NIC_A, dst, hlim=9), payload))
        assert out == [(port, want)]
    assert drops(sw) == {}


@pytest.mark.parametrize("pkt", [
    Ether(src="02:00:00:00:00:99", dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.0.0.1"),
    Ether(src="02:00:00:00:00:99", dst="02:00:01:00:00:01") / IP(dst="192.0.2.1") / UDP(),
], ids=["arp", "ipv4"])
def test_non_ipv6_is_dropped_and_counted(leaf0_switch, pkt) -> None:
    assert leaf0_switch.inject(1, bytes(pkt)) == []
    assert drops(leaf0_switch) == {DROP_NOT_IPV6: 1}


def test_port_without_mac_is_dropped_on_egress(fabric_switch_factory, tiny_fabric: Topology) -> None:
    entries = [e for e in switch_entries(tiny_fabric, "p0-leaf0")
               if not (e.table == "FabricEgress.port_mac" and dict(e.match)["standard_metadata.egress_port"] == Exact(3))]
    sw = fabric_switch_factory(entries)
    sent, out = send_one(sw, usid_carrier([L0, S0, L1, 0xE001]))
    assert out == []
    assert drops(sw) == {}
    assert drops(sw, EGRESS_DROPS) == {DROP_NO_PORT_MAC: 1}
    assert counter(sw, TX_PORT, 3) == Count(0, 0)


def test_payload_length_past_the_frame_is_dropped(leaf0_switch) -> None:
    """A frame cut short after the headers were written (IPv6 says more than is there)."""
    sent, _ = send_one(leaf0_switch, usid_carrier([L0, S0, L1, 0xE001]))
    cut = sent[:-10]
    assert leaf0_switch.inject(1, cut) == []
    from tests.dataplane.fabric.fabric_checks import DROP_BAD_LENGTH
    assert drops(leaf0_switch) == {DROP_BAD_LENGTH: 1}


def test_ethernet_padding_is_carried_along(leaf0_switch) -> None:
    """A minimum-size frame with padding after a short IPv6 packet is still forwarded."""
    pkt = bytes(frame(L2(mac(PLANE, NIC, 0, 1), mac(PLANE, LEAF, 0, 1)),
                      ipv6(NIC_A, usid_carrier([L0, S0, L1, 0xE001])) / IPv6(nh=59, src=HOST_A, dst=HOST_B)))
    padded = pkt + b"\x00" * 6
    out = leaf0_switch.inject(1, padded)
    want = bytes(frame(L2(mac(PLANE, LEAF, 0, 3), mac(PLANE, SPINE, 0, 1)),
                       ipv6(NIC_A, usid_carrier([S0, L1, 0xE001]), hlim=63) / IPv6(nh=59, src=HOST_A, dst=HOST_B)))
    assert out == [(3, want + b"\x00" * 6)]
