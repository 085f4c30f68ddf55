"""Every 2-tier path of a two-plane fabric delivers to the right NIC port.

Why: the uSID plan and the controller's static tables must give every (plane, source,
spine, destination) a working path with no per-path state. Each frame is walked
switch to switch through fabric.p4 filled with the controller's entries; the frame
the destination NIC receives is compared with one built from the path alone.
"""

from __future__ import annotations

import pytest

from fabric import plan as P
from fabric.topology import from_parameters
from tests.dataplane.fabric.fabric_checks import DROP_UNKNOWN_USID, drops
from tests.dataplane.fabric_net import build, ip, mac, walk
from tests.dataplane.packets import L2, encapsulated, ipv6, mrc_write, usid_carrier

TOPO = from_parameters(name="two-plane", planes=2, spines=2, leaves=2, hosts_per_leaf=2, no_trim=True)


@pytest.fixture(scope="module")
def switches():
    return build(TOPO)


@pytest.mark.parametrize("plane", range(TOPO.planes))
def test_every_path_of_every_plane(switches, plane: int) -> None:
    delivered = 0
    for src in TOPO.hosts:
        for dst in TOPO.hosts:
            if src == dst:
                continue
            for spine in range(TOPO.spines):
                if src.leaf == dst.leaf and spine:
                    continue  # same leaf: one path, no spine
                inner = (ipv6(ip(P.host_addr(src.leaf, src.port)), ip(P.host_addr(dst.leaf, dst.port)))
                         / mrc_write(ev=spine, psn=plane, payload=b"p" * 16))
                # The carrier, uSID by uSID as docs/addressing.md writes it: leaves of plane p
                # are 0x0100 + 0x300 p + i, spines 0x0300 + 0x300 p + j, NICs 0xE000 + port.
                la, lb = 0x0100 + 0x300 * plane + src.leaf, 0x0100 + 0x300 * plane + dst.leaf
                usids = [la, 0xE000 + dst.port] if src.leaf == dst.leaf else [
                    la, 0x0300 + 0x300 * plane + spine, lb, 0xE000 + dst.port]
                first_leaf = f"p{plane}-leaf{src.leaf}"
                sent = bytes(encapsulated(
                    L2(mac(plane, P.NIC, src.index, 1 + plane), mac(plane, P.LEAF, src.leaf, src.port)),
                    ip(P.nic_addr(src.leaf, src.port)), usid_carrier(usids), inner))
                hops = walk(TOPO, switches, first_leaf, src.port, sent)
                last = hops[-1]
                assert (last.to, last.to_port) == (dst.nic, 1 + plane)
                expect = [first_leaf] if src.leaf == dst.leaf else [
                    first_leaf, f"p{plane}-spine{spine}", f"p{plane}-leaf{dst.leaf}"]
                assert [h.node for h in hops] == expect
                want = bytes(encapsulated(
                    L2(mac(plane, P.LEAF, dst.leaf, dst.port), mac(plane, P.NIC, dst.index, 1 + plane)),
                    ip(P.nic_addr(src.leaf, src.port)), usid_carrier([0xE000 + dst.port]), inner,
                    hlim=64 - len(hops)))
                assert last.frame == want
                delivered += 1
    assert delivered == 4 * 3 * 2 - 4  # same-leaf pairs have one path


def test_planes_do_not_share_usids(switches) -> None:
    """A carrier of plane 0 means nothing in plane 1: dropped at the first leaf."""
    leaf = switches["p1-leaf0"]
    inner = ipv6("fd00:0:0:1::1", "fd00:0:1:1::1") / mrc_write(ev=1, psn=1)
    carrier0 = usid_carrier([0x0100, 0x0300, 0x0101, 0xE001])
    sent = bytes(encapsulated(L2("02:00:00:00:00:01", mac(1, P.LEAF, 0, 1)), "fd00:1:0:1::1", carrier0, inner))
    assert leaf.inject(1, sent) == []
    assert drops(leaf) == {DROP_UNKNOWN_USID: 1}
