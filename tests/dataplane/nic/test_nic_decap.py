"""Fabric -> host: decapsulation at the end of the carrier, trim marks, drops."""

from __future__ import annotations

import pytest
from scapy.layers.inet6 import IPv6, IPv6ExtHdrSegmentRouting
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from tests.dataplane.nic.nic_frames import fabric_frame, host_delivery
from tests.dataplane.nic.nic_case import host_ip, nic_ip, nic_plane_port
from tests.dataplane.packets import mrc_ack, mrc_write, usid_carrier

MY_SID = usid_carrier([0xE001])  # NIC on leaf port 1: fcbb:bb00:e001::
SRC = (1, 2)
DROP_BAD_LENGTH = 4
DROP_NOT_MY_SID = 11
DROP_SID_NOT_END = 12
DROP_NOT_ENCAPSULATED = 13
DROP_PARSE_ERROR = 1
DROP_UNKNOWN_PORT = 2


def inner_packet(ev: int = 0x1234, tc: int = 0x68, payload: bytes = b"p" * 64) -> bytes:
    return bytes(IPv6(src=host_ip(*SRC), dst=host_ip(0, 1), tc=tc, fl=0x5, hlim=63)
                 / mrc_write(ev, 77, payload))


def test_decap_delivers_the_exact_inner_packet(nic):
    sw, cfg = nic
    inner = inner_packet()
    for plane in range(cfg.planes):
        frame = fabric_frame(cfg, plane, nic_ip(*SRC), MY_SID, inner, tc=0x68, fl=0x1234)
        assert sw.inject(nic_plane_port(plane), frame) == [(0, host_delivery(cfg, inner))]
        assert sw.counter_read("NicIngress.plane_rx", plane) == (1, len(frame))
    assert sw.counter_read("NicIngress.ev_rx", 0x1234)[0] == cfg.planes


def test_decap_of_non_mrc_inner_and_of_a_final_srh_with_no_segments_left(nic):
    sw, cfg = nic
    inner = bytes(IPv6(src=host_ip(*SRC), dst=host_ip(0, 1), nh=59) / Raw(b"\x01" * 30))
    frame = fabric_frame(cfg, 1, nic_ip(*SRC), MY_SID, inner)
    assert sw.inject(nic_plane_port(1), frame) == [(0, host_delivery(cfg, inner))]
    srh = IPv6ExtHdrSegmentRouting(nh=41, type=4, segleft=0, lastentry=0,
                                   addresses=[MY_SID])
    frame = fabric_frame(cfg, 1, nic_ip(*SRC), MY_SID, inner, srh=srh)
    assert sw.inject(nic_plane_port(1), frame) == [(0, host_delivery(cfg, inner))]


def test_a_trimmed_arrival_reaches_the_host_with_the_trim_mark(nic):
    sw, cfg = nic
    # The trimmed packet: headers only, lengths fixed, outer DSCP = the trim mark.
    full = IPv6(src=host_ip(*SRC), dst=host_ip(0, 1), tc=0x68 | 0x1) / mrc_write(0x99, 5)
    inner = bytes(full)
    mark_tc = cfg.trim_dscp << 2 | 0x1  # ECN bits of the inner packet are kept
    frame = fabric_frame(cfg, 0, nic_ip(*SRC), MY_SID, inner, tc=cfg.trim_dscp << 2)
    [(port, data)] = sw.inject(nic_plane_port(0), frame)
    assert port == 0
    assert Ether(data)[IPv6].tc == mark_tc
    want_ip = IPv6(inner)
    want_ip.tc = mark_tc
    assert data == host_delivery(cfg, bytes(want_ip))
    # Only the traffic class changed (IPv6 bytes 0-1 hold version, TC, flow label).
    assert data[14 + 2:] == inner[2:]


def test_an_untrimmed_arrival_keeps_its_traffic_class(nic):
    sw, cfg = nic
    inner = inner_packet(tc=0x68)
    frame = fabric_frame(cfg, 0, nic_ip(*SRC), MY_SID, inner, tc=0xB8)
    assert sw.inject(nic_plane_port(0), frame) == [(0, host_delivery(cfg, inner))]


@pytest.mark.parametrize("dst,reason", [
    (usid_carrier([0xE002]), DROP_NOT_MY_SID),                 # another NIC's uSID
    (usid_carrier([0x0101, 0xE001]), DROP_NOT_MY_SID),         # a leaf's uSID
    (usid_carrier([0xE001, 0x0102]), DROP_SID_NOT_END),        # mine, but more follows
    (host_ip(0, 1), DROP_NOT_MY_SID),                        # plain host address
])
def test_arrivals_not_for_this_nic_are_dropped_and_counted(nic, dst, reason):
    sw, cfg = nic
    frame = fabric_frame(cfg, 0, nic_ip(*SRC), dst, inner_packet())
    assert sw.inject(nic_plane_port(0), frame) == []
    assert sw.counter_read("NicIngress.drops", reason)[0] == 1


def test_malformed_arrivals_are_dropped_and_counted(nic):
    sw, cfg = nic
    inner = inner_packet()
    good = fabric_frame(cfg, 0, nic_ip(*SRC), MY_SID, inner)
    port = nic_plane_port(0)
    # SRH with segments left: not the end of the path.
    srh = IPv6ExtHdrSegmentRouting(nh=41, type=4, segleft=1, lastentry=0, addresses=[MY_SID])
    assert sw.inject(port, fabric_frame(cfg, 0, nic_ip(*SRC), MY_SID, inner, srh=srh)) == []
    assert sw.counter_read("NicIngress.drops", DROP_SID_NOT_END)[0] == 1
    # No inner IPv6 (UDP right after the outer header).
    bare = bytes(Ether(good[:14]) / IPv6(src=nic_ip(*SRC), dst=MY_SID) / mrc_ack(5, 1))
    assert sw.inject(port, bare) == []
    assert sw.counter_read("NicIngress.drops", DROP_NOT_ENCAPSULATED)[0] == 1
    # Outer payload length longer than the frame; inner length inconsistent.
    longer = bytearray(good)
    longer[14 + 4:14 + 6] = (len(good) - 54 + 10).to_bytes(2, "big")
    assert sw.inject(port, bytes(longer)) == []
    lying = bytearray(good)
    lying[54 + 4:54 + 6] = (len(inner) - 40 - 8).to_bytes(2, "big")
    assert sw.inject(port, bytes(lying)) == []
    assert sw.counter_read("NicIngress.drops", DROP_BAD_LENGTH)[0] == 2
    # Truncated headers: every cut inside the outer/inner headers.
    cuts = [20, 40, 53, 60, 93]
    for cut in cuts:
        assert sw.inject(port, good[:cut]) == []
    assert sw.counter_read("NicIngress.drops", DROP_PARSE_ERROR)[0] == len(cuts)
    # A port the controller never named.
    assert sw.inject(9, good) == []
    assert sw.counter_read("NicIngress.drops", DROP_UNKNOWN_PORT)[0] == 1
    # The good frame still goes through.
    assert sw.inject(port, good) == [(0, host_delivery(cfg, inner))]
