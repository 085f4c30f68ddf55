"""Fabric -> host: an outer CE (set by a congested fabric port) reaches the host.

RFC 6040's normal mode on decapsulation: CE in the outer traffic class makes an
ECN-capable inner packet (ECT(0) or ECT(1)) CE; a not-ECN-capable inner packet is
delivered as it was; without CE outside nothing changes.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet6 import IPv6

from tests.dataplane.nic.nic_case import host_ip, nic_ip, nic_plane_port
from tests.dataplane.nic.nic_frames import fabric_frame, host_delivery
from tests.dataplane.packets import mrc_write, usid_carrier

MY_SID = usid_carrier([0xE001])
SRC = (1, 2)


def inner(tc: int) -> bytes:
    return bytes(IPv6(src=host_ip(*SRC), dst=host_ip(0, 1), tc=tc, fl=0x5, hlim=63) / mrc_write(0x1234, 77, b"p" * 64))


@pytest.mark.parametrize("outer_ecn,inner_ecn,delivered_ecn", [
    (0b11, 0b10, 0b11),  # CE outside, ECT(0) inside: CE
    (0b11, 0b01, 0b11),  # CE outside, ECT(1) inside: CE
    (0b11, 0b11, 0b11),  # already CE
    (0b11, 0b00, 0b00),  # not ECN-capable inside: left alone
    (0b10, 0b10, 0b10),  # no congestion: as sent
    (0b00, 0b01, 0b01),
])
def test_outer_ce_reaches_an_ecn_capable_inner_packet(nic, outer_ecn: int, inner_ecn: int,
                                                      delivered_ecn: int) -> None:
    sw, cfg = nic
    dscp = 10 << 2
    sent = inner(dscp | inner_ecn)
    frame = fabric_frame(cfg, 1, nic_ip(*SRC), MY_SID, sent, tc=dscp | outer_ecn)
    assert sw.inject(nic_plane_port(1), frame) == [(0, host_delivery(cfg, inner(dscp | delivered_ecn)))]


def test_a_trimmed_arrival_with_ce_keeps_both_marks(nic) -> None:
    sw, cfg = nic
    sent = inner(0b10)
    frame = fabric_frame(cfg, 0, nic_ip(*SRC), MY_SID, sent, tc=cfg.trim_dscp << 2 | 0b11)
    assert sw.inject(nic_plane_port(0), frame) == [(0, host_delivery(cfg, inner(cfg.trim_dscp << 2 | 0b11)))]
