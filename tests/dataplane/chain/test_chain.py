"""Five switches in one process: NIC, leaf, spine, leaf, NIC.

fabric.p4 runs on every leaf and spine of a small 2-plane fabric, nic.p4 on every
host's NIC, all filled with the controller's entries (fabric/entries.py). The test
feeds each switch's output to the port of the next switch it is cabled to
(fabric.paths.neighbour) and checks that every EV's packet reaches the right
host unchanged, over the path the EV names.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from fabric.plan import generated_ev
from fabric.topology import from_parameters
from tests.dataplane.fabric_net import FABRIC_P4, Hop, build, load, switch_entries, walk
from tests.dataplane.nic.nic_case import NIC_HOST_PORT, NicCase, generated, nic_case, nic_plane_port
from tests.dataplane.nic.nic_frames import host_delivery, mrc_frame, udp_frame

# 4 EVs per NIC: one per (plane, spine) path of 2 planes x 2 spines.
TOPO = from_parameters(name="chain", planes=2, spines=2, leaves=2, hosts_per_leaf=2, evs_per_nic=4)
HOSTS = [(h.leaf, h.port) for h in TOPO.hosts]
TRIM_DSCP = 62  # the default trim mark (docs/packet-formats.md)


class Chain:
    """Every switch of the fabric plus one NIC per host, wired by the controller's cabling."""

    def __init__(self, *, generated_evs: bool) -> None:
        self.topo = generated(TOPO) if generated_evs else TOPO
        self.switches = build(self.topo, nics=True)
        self.cases: dict[tuple[int, int], NicCase] = {hp: nic_case(self.topo, *hp) for hp in HOSTS}

    def send(self, src: tuple[int, int], frame: bytes) -> tuple[list[Hop], tuple[int, int], bytes]:
        """Host ``src`` sends ``frame``; returns the hops (NIC, fabric, NIC), the receiving
        host and what its NIC delivered to it."""
        hops = walk(self.topo, self.switches, self.cases[src].host.nic, NIC_HOST_PORT, frame)
        assert hops, "the NIC dropped the frame"
        last = hops[-1]
        assert last.to_port == 0 and last.to.startswith("h"), f"{last.node} sent it to {last.to}"
        dst = self.topo.host(last.to)
        return hops, (dst.leaf, dst.port), last.frame


@pytest.fixture(scope="module")
def explicit_chain() -> Chain:
    return Chain(generated_evs=False)


@pytest.fixture(scope="module")
def generated_chain() -> Chain:
    return Chain(generated_evs=True)


def nic_name(leaf: int, port: int) -> str:
    return f"nic{leaf * 2 + port}"  # hosts are numbered leaf by leaf, 2 per leaf, from 1


def expected_hops(plane: int, src: tuple[int, int], spine: int, dst: tuple[int, int]) -> list[str]:
    fabric = [f"p{plane}-leaf{src[0]}"] if src[0] == dst[0] else [
        f"p{plane}-leaf{src[0]}", f"p{plane}-spine{spine}", f"p{plane}-leaf{dst[0]}"]
    return [nic_name(*src)] + fabric + [nic_name(*dst)]


def test_every_explicit_ev_delivers_the_packet_unchanged_over_its_path(explicit_chain):
    checked = 0
    for src, cfg in explicit_chain.cases.items():
        assert len(cfg.explicit) == 3 * 4
        for e in cfg.explicit:
            dst = (e.dst_leaf, e.dst_port)
            frame = mrc_frame(cfg, *dst, e.ev, psn=checked)
            hops, got, delivered = explicit_chain.send(src, bytes(frame))
            assert [h.node for h in hops] == expected_hops(e.plane, src, e.spine, dst)
            assert hops[0].port == 1 + e.plane
            assert got == dst
            assert delivered == host_delivery(explicit_chain.cases[dst], bytes(frame)[14:])
            checked += 1
    # 4 hosts, each with 3 destinations x 2 planes x 2 spines.
    assert checked == 4 * 3 * 4


@pytest.mark.parametrize("entropy", [0, 17])
def test_generated_evs_deliver_over_their_plane_and_spine(generated_chain, entropy):
    for src, cfg in generated_chain.cases.items():
        for dst in HOSTS:
            if dst == src:
                continue
            for plane in range(TOPO.planes):
                for spine in range(TOPO.spines):
                    ev = generated_ev(plane, spine, entropy)
                    frame = mrc_frame(cfg, *dst, ev)
                    hops, got, delivered = generated_chain.send(src, bytes(frame))
                    assert [h.node for h in hops] == expected_hops(plane, src, spine, dst)
                    assert got == dst
                    assert delivered == host_delivery(generated_chain.cases[dst], bytes(frame)[14:])


def test_sprayed_traffic_reaches_its_host_on_every_path(explicit_chain):
    src, dst = (0, 1), (1, 2)
    cfg, dst_cfg = explicit_chain.cases[src], explicit_chain.cases[dst]
    paths = set()
    for i in range(64):
        frame = mrc_frame(cfg, *dst, 0xF00D, psn=i)  # EV not in the list: sprayed
        hops, got, delivered = explicit_chain.send(src, bytes(frame))
        assert got == dst
        assert delivered == host_delivery(dst_cfg, bytes(frame)[14:])
        paths.add(tuple(h.node for h in hops))
    assert len(paths) == TOPO.planes * TOPO.spines
    frame = udp_frame(cfg, *dst, sport=4242)
    _, got, delivered = explicit_chain.send(src, bytes(frame))
    assert got == dst
    assert delivered == host_delivery(dst_cfg, bytes(frame)[14:])
    # The fabric switches saw an SRv6 packet: the inner packet kept its hop limit.
    assert Ether(delivered)[IPv6].hlim == 64


def test_a_packet_trimmed_in_the_fabric_reaches_the_host_with_the_mark():
    """A burst congests leaf 0's uplink in plane 0: the trimmed packets arrive at the
    host as headers only, with the trim DSCP in their (inner) traffic class."""
    from scapy.layers.inet import UDP

    from tests.dataplane.packets import BTH, RETH

    chain = Chain(generated_evs=False)
    threshold = 2
    trimming = from_parameters(name="chain", planes=2, spines=2, leaves=2, hosts_per_leaf=2, evs_per_nic=4,
                               trim_threshold=threshold)
    sw = load(FABRIC_P4, switch_entries(trimming, "p0-leaf0"))
    chain.switches["p0-leaf0"] = sw
    uplink = 3  # leaf port 2 hosts + 1 + spine 0
    sw.set_queue_rate(uplink, 1000.0)

    src, dst = (0, 1), (1, 2)
    cfg, dst_cfg = chain.cases[src], chain.cases[dst]
    nic = chain.switches[cfg.host.nic]
    e = next(e for e in cfg.explicit if (e.dst_leaf, e.dst_port, e.plane, e.spine) == (1, 2, 0, 0))
    payload = bytes(range(200))
    # MRC-lite's traffic class, the one the fabric trims: DSCP 0, ECT(0)
    frames = [mrc_frame(cfg, *dst, e.ev, psn=psn, payload=payload, tc=0x02) for psn in range(10)]
    for f in frames:
        [(port, data)] = nic.inject(NIC_HOST_PORT, bytes(f))
        assert port == nic_plane_port(0)
        sw.send(src[1], data)  # leaf port n faces the NIC of host (leaf, n)
    out = sw.run_until_idle() + sw.advance(1.0)
    assert len(out) == len(frames)

    trimmed = 0
    for port, data in out:
        assert port == uplink
        hops = walk(chain.topo, chain.switches, "p0-spine0", 1, data)  # spine port 1 + leaf 0
        assert [h.node for h in hops] == ["p0-spine0", "p0-leaf1", dst_cfg.host.nic]
        delivered = hops[-1].frame
        psn = Ether(delivered)[BTH].psn
        sent = frames[psn]
        if len(delivered) == len(bytes(sent)):
            assert delivered == host_delivery(dst_cfg, bytes(sent)[14:])
            continue
        trimmed += 1
        inner = (IPv6(src=sent[IPv6].src, dst=sent[IPv6].dst, tc=(TRIM_DSCP << 2) | 0x2,
                      fl=sent[IPv6].fl, hlim=sent[IPv6].hlim)
                 / UDP(sport=4791, dport=4791)
                 / BTH(opcode=0x0A, pkey=e.ev, dest_qp=0x12, psn=psn, ack_req=1)
                 / RETH(vaddr=0x1000, rkey=0x55, dma_len=len(payload)))
        assert delivered == host_delivery(dst_cfg, bytes(inner))
    assert trimmed >= len(frames) - threshold - 2


def test_a_dead_plane_link_is_avoided_by_sprayed_traffic():
    chain = Chain(generated_evs=False)
    src, dst = (1, 1), (0, 2)
    cfg, dst_cfg = chain.cases[src], chain.cases[dst]
    nic = chain.switches[cfg.host.nic]
    nic.set_port_status(nic_plane_port(1), False)  # the NIC's link to plane 1 fails
    planes = set()
    for i in range(40):
        frame = mrc_frame(cfg, *dst, 0xF00D, psn=i)
        hops, got, delivered = chain.send(src, bytes(frame))
        assert got == dst
        assert delivered == host_delivery(dst_cfg, bytes(frame)[14:])
        planes.add(hops[0].port - 1)
    assert planes == {0}
    nic.set_port_status(nic_plane_port(1), True)
    planes = {chain.send(src, bytes(mrc_frame(cfg, *dst, 0xF00D, psn=i)))[0][0].port - 1 for i in range(8)}
    assert planes == {0, 1}
