"""Every 2-tier path of a two-plane tiny fabric delivers to the right NIC port.

Why: the uSID plan and the static tables must give every (plane, source, spine,
destination) a working path with no per-path state. Each frame is walked switch to
switch through fabric.p4; the frame the destination NIC receives is compared with
one built from the address plan alone.
"""

from __future__ import annotations

import pytest
from tests.dataplane.fabric.fabric_checks import DROP_UNKNOWN_USID, drops
from tests.dataplane.packets import L2, encapsulated, ipv6, mrc_write, usid_carrier
from tests.dataplane.tiny_fabric import LEAF, NIC, SPINE, Node, TinyFabric, build, host_addr, mac, nic_addr, usid, walk

FAB = TinyFabric(planes=2, leaves=2, spines=2, hosts_per_leaf=2)
HOSTS = [(leaf, port) for leaf in range(FAB.leaves) for port in range(1, FAB.hosts_per_leaf + 1)]


@pytest.fixture(scope="module")
def switches():
    return build(FAB)


@pytest.mark.parametrize("plane", range(FAB.planes))
def test_every_path_of_every_plane(switches, plane: int) -> None:
    delivered = 0
    for src in HOSTS:
        for dst in HOSTS:
            if src == dst:
                continue
            for spine in range(FAB.spines):
                if src[0] == dst[0] and spine:
                    continue  # same leaf: one path, no spine
                inner = ipv6(host_addr(*src), host_addr(*dst)) / mrc_write(ev=spine, psn=plane, payload=b"p" * 16)
                src_nic = Node(plane, NIC, FAB.host_index(*src))
                dst_nic = Node(plane, NIC, FAB.host_index(*dst))
                first_leaf = Node(plane, LEAF, src[0])
                carrier = FAB.carrier(plane, src[0], spine, dst[0], dst[1])
                sent = bytes(encapsulated(L2(FAB.port_mac(src_nic, FAB.nic_port(plane)), FAB.port_mac(first_leaf, src[1])),
                                          nic_addr(*src), carrier, inner))
                hops = walk(FAB, switches, first_leaf, src[1], sent)
                last = hops[-1]
                assert FAB.neighbour(last.node, last.port) == (dst_nic, FAB.nic_port(plane))
                expect_nodes = [first_leaf] if src[0] == dst[0] else [
                    first_leaf, Node(plane, SPINE, spine), Node(plane, LEAF, dst[0])]
                assert [h.node for h in hops] == expect_nodes
                want = bytes(encapsulated(
                    L2(mac(plane, LEAF, dst[0], dst[1]), mac(plane, NIC, FAB.host_index(*dst), 1 + plane)),
                    nic_addr(*src), usid_carrier([0xE000 + dst[1]]), inner, hlim=64 - len(hops)))
                assert last.frame == want
                delivered += 1
    assert delivered == 4 * 3 * 2 - 4  # same-leaf pairs have one path


def test_planes_do_not_share_usids() -> None:
    """A carrier of plane 0 means nothing in plane 1: dropped at the first leaf."""
    sws = build(TinyFabric(planes=2))
    plane1_leaf0 = Node(1, LEAF, 0)
    inner = ipv6(host_addr(0, 1), host_addr(1, 1)) / mrc_write(ev=1, psn=1)
    carrier0 = usid_carrier([usid(0, LEAF, 0), usid(0, SPINE, 0), usid(0, LEAF, 1), 0xE001])
    sent = bytes(encapsulated(L2("02:00:00:00:00:01", mac(1, LEAF, 0, 1)), nic_addr(0, 1), carrier0, inner))
    assert sws[plane1_leaf0].inject(1, sent) == []
    assert drops(sws[plane1_leaf0]) == {DROP_UNKNOWN_USID: 1}
