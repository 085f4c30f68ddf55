"""Scapy frames a host sends into its NIC and frames a NIC should send to the fabric.

Why separate from nic_case: the plan names addresses; this module turns them into
wire bytes. Expected frames are written from what docs/addressing.md and docs/nic.md
say the wire must carry (outer header fields, MACs), never by running any of nic.p4's
logic in Python.
"""

from __future__ import annotations

from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from tests.dataplane.nic.nic_case import NicCase, host_ip, nic_ip
from tests.dataplane.packets import mrc_write

OUTER_HOP_LIMIT = 64


def host_frame(cfg: NicCase, dst_leaf: int, dst_port: int, l4: Packet, *,
               tc: int = 0, fl: int = 0, hlim: int = 64, dst: str | None = None) -> Ether:
    """A frame the host behind ``cfg`` sends to its gateway (the NIC)."""
    return (Ether(src=cfg.host_mac, dst=cfg.gw_mac)
            / IPv6(src=host_ip(cfg.leaf, cfg.port),
                   dst=dst if dst is not None else host_ip(dst_leaf, dst_port),
                   tc=tc, fl=fl, hlim=hlim)
            / l4)


def mrc_frame(cfg: NicCase, dst_leaf: int, dst_port: int, ev: int, psn: int = 1,
              payload: bytes = b"data" * 8, tc: int = 0x68, dst: str | None = None) -> Ether:
    """An MRC-lite WRITE from the host with EV ``ev`` in the UDP source port (to
    ``dst`` instead of the host at (dst_leaf, dst_port) when given)."""
    return host_frame(cfg, dst_leaf, dst_port, mrc_write(ev, psn, payload), tc=tc, dst=dst)


def udp_frame(cfg: NicCase, dst_leaf: int, dst_port: int, sport: int, dport: int = 5001,
              payload: bytes = b"x" * 20) -> Ether:
    """Plain (non-MRC) UDP from the host."""
    return host_frame(cfg, dst_leaf, dst_port, UDP(sport=sport, dport=dport) / Raw(payload))


def inner_of(frame: Ether) -> bytes:
    """The host's IPv6 packet (what travels inside the tunnel), as bytes."""
    return bytes(frame)[14:]


def expected_fabric_frame(cfg: NicCase, plane: int, carrier: str, inner: bytes, *,
                          flow_label: int, traffic_class: int,
                          next_carrier: str | None = None) -> bytes:
    """What the NIC must send on plane ``plane``: H.Encaps.Red of ``inner``."""
    eth = Ether(src=cfg.plane_mac(plane), dst=cfg.leaf_mac(plane))
    outer = IPv6(src=nic_ip(cfg.leaf, cfg.port), dst=carrier, hlim=OUTER_HOP_LIMIT,
                 tc=traffic_class, fl=flow_label)
    if next_carrier is None:
        outer.nh = 41
        return bytes(eth / outer / Raw(inner))
    srh = IPv6ExtHdrSegmentRouting(nh=41, type=4, segleft=1, lastentry=0, len=2,
                                   addresses=[next_carrier])
    return bytes(eth / outer / srh / Raw(inner))


def fabric_frame(cfg: NicCase, plane: int, outer_src: str, outer_dst: str, inner: bytes, *,
                 tc: int = 0, fl: int = 0, hlim: int = 61, srh: Packet | None = None) -> bytes:
    """A frame the last leaf sends to this NIC on plane ``plane``."""
    eth = Ether(src=cfg.leaf_mac(plane), dst=cfg.plane_mac(plane))
    outer = IPv6(src=outer_src, dst=outer_dst, tc=tc, fl=fl, hlim=hlim)
    if srh is None:
        outer.nh = 41
        return bytes(eth / outer / Raw(inner))
    return bytes(eth / outer / srh / Raw(inner))


def host_delivery(cfg: NicCase, inner: bytes) -> bytes:
    """What the host must receive: its gateway's MAC, the inner packet unchanged."""
    eth = Ether(src=cfg.gw_mac, dst=cfg.host_mac, type=0x86DD)
    return bytes(eth) + inner
