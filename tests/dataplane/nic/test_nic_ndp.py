"""Host reachability: the NIC answers neighbour solicitations and pings for the gateway."""

from __future__ import annotations

import socket

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    ICMPv6MLReport2,
    ICMPv6ND_NA,
    ICMPv6ND_NS,
    ICMPv6ND_RS,
    ICMPv6NDOptDstLLAddr,
    ICMPv6NDOptSrcLLAddr,
    IPv6,
    in6_getnsma,
    in6_getnsmac,
)
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils6 import inet_pton

from tests.dataplane.nic.nic_case import gateway_ip, host_ip

DROP_HOST_MULTICAST = 5
DROP_NDP = 6
DROP_BAD_CHECKSUM = 7


def solicited_node(addr: str) -> str:
    return socket.inet_ntop(socket.AF_INET6, in6_getnsma(inet_pton(socket.AF_INET6, addr)))


def ns_frame(cfg, target: str, *, multicast: bool = True, option: bool = True,
             src: str | None = None, hlim: int = 255) -> Ether:
    hmac = cfg.host_mac
    gw = cfg.gw_mac
    dst = solicited_node(target) if multicast else target
    eth_dst = in6_getnsmac(inet_pton(socket.AF_INET6, target)) if multicast else gw
    pkt = (Ether(src=hmac, dst=eth_dst)
           / IPv6(src=src or host_ip(cfg.leaf, cfg.port), dst=dst, hlim=hlim)
           / ICMPv6ND_NS(tgt=target))
    if option:
        pkt = pkt / ICMPv6NDOptSrcLLAddr(lladdr=hmac)
    return pkt


def expected_na(cfg, to: str) -> bytes:
    gw = gateway_ip(cfg.leaf, cfg.port)
    gw_mac = cfg.gw_mac
    return bytes(Ether(src=gw_mac, dst=cfg.host_mac)
                 / IPv6(src=gw, dst=to, hlim=255)
                 / ICMPv6ND_NA(tgt=gw, R=1, S=1, O=1)
                 / ICMPv6NDOptDstLLAddr(lladdr=gw_mac))


@pytest.mark.parametrize("multicast,option", [(True, True), (False, True), (False, False)])
def test_solicitation_for_the_gateway_is_answered(nic, multicast, option):
    sw, cfg = nic
    ns = ns_frame(cfg, gateway_ip(cfg.leaf, cfg.port), multicast=multicast, option=option)
    out = sw.inject(0, bytes(ns))
    assert out == [(0, expected_na(cfg, host_ip(cfg.leaf, cfg.port)))]
    na = Ether(out[0][1])
    # scapy checks the checksum it did not compute: rebuild with it cleared and compare.
    want = na.copy()
    del want[ICMPv6ND_NA].cksum
    assert Ether(bytes(want))[ICMPv6ND_NA].cksum == na[ICMPv6ND_NA].cksum


@pytest.mark.parametrize("ns_kwargs", [
    dict(target="fd00:0:0:1::2"),                      # another address
    dict(target="fd00:0:0:1::fe", hlim=64),            # not from on-link (RFC 4861 7.1.1)
    dict(target="fd00:0:0:1::fe", src="::"),           # duplicate address detection
])
def test_other_solicitations_are_dropped_and_counted(nic, ns_kwargs):
    sw, cfg = nic
    assert sw.inject(0, bytes(ns_frame(cfg, **ns_kwargs))) == []
    assert sw.counter_read("NicIngress.drops", DROP_NDP)[0] == 1


def test_solicitation_with_a_bad_checksum_is_dropped(nic):
    sw, cfg = nic
    ns = ns_frame(cfg, gateway_ip(cfg.leaf, cfg.port))
    ns[ICMPv6ND_NS].cksum = 0x1234
    assert sw.inject(0, bytes(ns)) == []
    assert sw.counter_read("NicIngress.drops", DROP_BAD_CHECKSUM)[0] == 1


def test_host_multicast_and_router_solicitations_are_dropped_and_counted(nic):
    sw, cfg = nic
    hmac = cfg.host_mac
    src = host_ip(cfg.leaf, cfg.port)
    rs = Ether(src=hmac, dst="33:33:00:00:00:02") / IPv6(src=src, dst="ff02::2", hlim=255) / ICMPv6ND_RS()
    mld = (Ether(src=hmac, dst="33:33:00:00:00:16") / IPv6(src=src, dst="ff02::16", hlim=1)
           / ICMPv6MLReport2())
    udp_mc = Ether(src=hmac, dst="33:33:00:00:00:01") / IPv6(src=src, dst="ff02::1", nh=59) / Raw(b"z" * 8)
    assert sw.inject(0, bytes(rs)) == []
    assert sw.inject(0, bytes(mld)) == []
    assert sw.inject(0, bytes(udp_mc)) == []
    assert sw.counter_read("NicIngress.drops", DROP_NDP)[0] == 1
    assert sw.counter_read("NicIngress.drops", DROP_HOST_MULTICAST)[0] == 2


DROP_FOR_GATEWAY = 16


def echo_request(cfg, *, data: bytes = b"ping" * 14, cksum: int | None = None) -> Ether:
    req = ICMPv6EchoRequest(id=0x4321, seq=7, data=data)
    if cksum is not None:
        req.cksum = cksum
    return (Ether(src=cfg.host_mac, dst=cfg.gw_mac)
            / IPv6(src=host_ip(cfg.leaf, cfg.port), dst=gateway_ip(cfg.leaf, cfg.port), hlim=64)
            / req)


@pytest.mark.parametrize("data", [b"", b"x", b"ping" * 14, bytes(range(256)) * 4])
def test_the_gateway_answers_pings(nic, data):
    sw, cfg = nic
    out = sw.inject(0, bytes(echo_request(cfg, data=data)))
    want = (Ether(src=cfg.gw_mac, dst=cfg.host_mac)
            / IPv6(src=gateway_ip(cfg.leaf, cfg.port), dst=host_ip(cfg.leaf, cfg.port), hlim=64)
            / ICMPv6EchoReply(id=0x4321, seq=7, data=data))
    assert out == [(0, bytes(want))]


def test_other_traffic_to_the_gateway_is_dropped_and_counted(nic):
    sw, cfg = nic
    bad = echo_request(cfg, cksum=0xDEAD)
    udp = (Ether(src=cfg.host_mac, dst=cfg.gw_mac)
           / IPv6(src=host_ip(cfg.leaf, cfg.port), dst=gateway_ip(cfg.leaf, cfg.port))
           / UDP(sport=1, dport=2) / Raw(b"hi"))
    assert sw.inject(0, bytes(bad)) == []
    assert sw.inject(0, bytes(udp)) == []
    assert sw.counter_read("NicIngress.drops", DROP_FOR_GATEWAY)[0] == 2
