"""Five switches in one process: NIC, leaf, spine, leaf, NIC (issue 6 acceptance).

fabric.p4 runs on every leaf and spine of a small 2-plane fabric (entries from the
shared tiny_fabric fixture), nic.p4 on every host's NIC (entries from nic_plan). The
test feeds each switch's output to the port of the next switch it is cabled to, and
checks that every EV's packet reaches the right host unchanged, over the path the EV
names.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from tests.dataplane import tiny_fabric as tf
from tests.dataplane.nic.nic_frames import host_delivery, mrc_frame, udp_frame
from tests.dataplane.nic.nic_plan import (
    NIC_HOST_PORT,
    Fabric,
    NicConfig,
    explicit_evs,
    generated_ev,
    install_nic,
    nic_plane_port,
)

NIC_P4 = Path(__file__).resolve().parents[3] / "p4src" / "nic.p4"
FABRIC = Fabric(planes=2, leaves=2, spines=2, hosts_per_leaf=2)
TINY = FABRIC.tiny()


class Chain:
    """Every switch of the fabric plus one NIC per host, wired by tiny_fabric's cabling."""

    def __init__(self, *, generated: bool) -> None:
        from p4target import Switch

        self.fabric = tf.build(TINY)
        self.nics: dict[tuple[int, int], tuple[object, NicConfig]] = {}
        for leaf, port in FABRIC.hosts():
            sw = Switch.load(str(NIC_P4), seed=1)
            cfg = NicConfig(FABRIC, leaf, port,
                            explicit=[] if generated else explicit_evs(FABRIC, leaf, port))
            install_nic(sw, cfg, generated=generated)
            self.nics[(leaf, port)] = (sw, cfg)

    def send(self, src: tuple[int, int], frame: bytes) -> tuple[list[tf.Hop], tuple[int, int], list]:
        """Host ``src`` sends ``frame``; returns the fabric hops, the receiving host
        and what its NIC delivered to it."""
        nic, cfg = self.nics[src]
        [(port, data)] = nic.inject(NIC_HOST_PORT, frame)
        plane = port - 1
        start, in_port = TINY.neighbour(tf.Node(plane, tf.NIC, TINY.host_index(*src)), port)
        hops = tf.walk(TINY, self.fabric, start, in_port, data)
        assert hops, "the first leaf dropped the frame"
        last = hops[-1]
        dst_node, dst_port = TINY.neighbour(last.node, last.port)
        assert dst_node.tier == tf.NIC and dst_port == nic_plane_port(plane)
        dst = TINY.host_of_index(dst_node.index)
        dst_nic, _ = self.nics[dst]
        return hops, dst, dst_nic.inject(dst_port, last.frame)


@pytest.fixture(scope="module")
def explicit_chain() -> Chain:
    return Chain(generated=False)


@pytest.fixture(scope="module")
def generated_chain() -> Chain:
    return Chain(generated=True)


def expected_hops(plane: int, src_leaf: int, spine: int, dst_leaf: int) -> list[tf.Node]:
    if src_leaf == dst_leaf:
        return [tf.Node(plane, tf.LEAF, src_leaf)]
    return [tf.Node(plane, tf.LEAF, src_leaf), tf.Node(plane, tf.SPINE, spine),
            tf.Node(plane, tf.LEAF, dst_leaf)]


def test_every_explicit_ev_delivers_the_packet_unchanged_over_its_path(explicit_chain):
    checked = 0
    for (leaf, port), (_, cfg) in explicit_chain.nics.items():
        for e in cfg.explicit:
            frame = mrc_frame(cfg, e.dst_leaf, e.dst_port, e.ev, psn=checked)
            hops, dst, delivered = explicit_chain.send((leaf, port), bytes(frame))
            assert [h.node for h in hops] == expected_hops(e.plane, leaf, e.spine, e.dst_leaf)
            assert dst == (e.dst_leaf, e.dst_port)
            _, dst_cfg = explicit_chain.nics[dst]
            assert delivered == [(NIC_HOST_PORT, host_delivery(dst_cfg, bytes(frame)[14:]))]
            checked += 1
    # 4 hosts, each with 3 destinations x 2 planes x 2 spines.
    assert checked == 4 * 3 * 4


@pytest.mark.parametrize("entropy", [0, 17])
def test_generated_evs_deliver_over_their_plane_and_spine(generated_chain, entropy):
    for (leaf, port), (_, cfg) in generated_chain.nics.items():
        for dst_leaf, dst_port in FABRIC.hosts():
            if (dst_leaf, dst_port) == (leaf, port):
                continue
            for plane in range(FABRIC.planes):
                for spine in range(FABRIC.spines):
                    ev = generated_ev(plane, spine, entropy)
                    frame = mrc_frame(cfg, dst_leaf, dst_port, ev)
                    hops, dst, delivered = generated_chain.send((leaf, port), bytes(frame))
                    assert [h.node for h in hops] == expected_hops(plane, leaf, spine, dst_leaf)
                    assert dst == (dst_leaf, dst_port)
                    _, dst_cfg = generated_chain.nics[dst]
                    assert delivered == [(NIC_HOST_PORT, host_delivery(dst_cfg, bytes(frame)[14:]))]


def test_sprayed_traffic_reaches_its_host_on_every_path(explicit_chain):
    src, dst = (0, 1), (1, 2)
    _, cfg = explicit_chain.nics[src]
    _, dst_cfg = explicit_chain.nics[dst]
    paths = set()
    for i in range(64):
        frame = mrc_frame(cfg, *dst, 0xF00D, psn=i)  # EV not in the list: sprayed
        hops, got_dst, delivered = explicit_chain.send(src, bytes(frame))
        assert got_dst == dst
        assert delivered == [(NIC_HOST_PORT, host_delivery(dst_cfg, bytes(frame)[14:]))]
        paths.add(tuple(h.node for h in hops))
    assert len(paths) == FABRIC.planes * FABRIC.spines
    frame = udp_frame(cfg, *dst, sport=4242)
    _, got_dst, delivered = explicit_chain.send(src, bytes(frame))
    assert got_dst == dst
    assert delivered == [(NIC_HOST_PORT, host_delivery(dst_cfg, bytes(frame)[14:]))]
    # The fabric switches saw an SRv6 packet: the inner packet kept its hop limit.
    assert Ether(delivered[0][1])[IPv6].hlim == 64


def test_a_packet_trimmed_in_the_fabric_reaches_the_host_with_the_mark():
    """A burst congests leaf 0's uplink in plane 0: the trimmed packets arrive at the
    host as headers only, with the trim DSCP in their (inner) traffic class."""
    from scapy.layers.inet import UDP

    from tests.dataplane.packets import BTH, RETH

    chain = Chain(generated=False)
    threshold = 2
    leaf0 = tf.Node(0, tf.LEAF, 0)
    sw = tf.load_switch()
    tf.install(sw, TINY.entries(leaf0, trim_threshold=threshold))
    chain.fabric[leaf0] = sw
    uplink = TINY.leaf_uplink_port(0)
    sw.set_queue_rate(uplink, 1000.0)

    src, dst = (0, 1), (1, 2)
    nic, cfg = chain.nics[src]
    e = next(e for e in cfg.explicit if (e.dst_leaf, e.dst_port, e.plane, e.spine) == (1, 2, 0, 0))
    payload = bytes(range(200))
    frames = [mrc_frame(cfg, *dst, e.ev, psn=psn, payload=payload, tc=0x69) for psn in range(10)]
    for f in frames:
        [(port, data)] = nic.inject(NIC_HOST_PORT, bytes(f))
        assert port == nic_plane_port(0)
        sw.send(src[1], data)  # leaf port n faces the NIC of host (leaf, n)
    out = sw.run_until_idle() + sw.advance(1.0)
    assert len(out) == len(frames)

    dst_nic, dst_cfg = chain.nics[dst]
    spine, spine_port = TINY.neighbour(leaf0, uplink)
    trimmed = 0
    for port, data in out:
        assert port == uplink
        hops = tf.walk(TINY, chain.fabric, spine, spine_port, data)
        last = hops[-1]
        [(host_port, delivered)] = dst_nic.inject(nic_plane_port(0), last.frame)
        assert host_port == NIC_HOST_PORT
        psn = Ether(delivered)[BTH].psn
        sent = frames[psn]
        if len(delivered) == len(bytes(sent)):
            assert delivered == host_delivery(dst_cfg, bytes(sent)[14:])
            continue
        trimmed += 1
        inner = (IPv6(src=sent[IPv6].src, dst=sent[IPv6].dst, tc=(tf.TRIM_DSCP << 2) | 0x1,
                      fl=sent[IPv6].fl, hlim=sent[IPv6].hlim)
                 / UDP(sport=e.ev, dport=4791)
                 / BTH(opcode=0x0A, dest_qp=0x12, psn=psn, ack_req=1)
                 / RETH(vaddr=0x1000, rkey=0x55, dma_len=len(payload)))
        assert delivered == host_delivery(dst_cfg, bytes(inner))
    assert trimmed >= len(frames) - threshold - 2


def test_a_dead_plane_link_is_avoided_by_sprayed_traffic():
    chain = Chain(generated=False)
    src, dst = (1, 1), (0, 2)
    nic, cfg = chain.nics[src]
    _, dst_cfg = chain.nics[dst]
    nic.set_port_status(nic_plane_port(1), False)  # the NIC's link to plane 1 fails
    planes = set()
    for i in range(40):
        frame = mrc_frame(cfg, *dst, 0xF00D, psn=i)
        hops, got_dst, delivered = chain.send(src, bytes(frame))
        assert got_dst == dst
        assert delivered == [(NIC_HOST_PORT, host_delivery(dst_cfg, bytes(frame)[14:]))]
        planes.add(hops[0].node.plane)
    assert planes == {0}
    nic.set_port_status(nic_plane_port(1), True)
    planes = {chain.send(src, bytes(mrc_frame(cfg, *dst, 0xF00D, psn=i)))[0][0].node.plane
              for i in range(8)}
    assert planes == {0, 1}
