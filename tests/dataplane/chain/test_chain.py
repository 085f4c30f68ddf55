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
