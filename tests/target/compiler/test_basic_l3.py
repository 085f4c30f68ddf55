"""A typical v1model router through the compiler and the Switch: model names and bytes."""

from __future__ import annotations

import pytest
from scapy.layers.inet import UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from p4target import Switch
from p4target.compiler import compile_file
from p4target.runtime.entries import Exact, Lpm

PROG = "basic_l3.p4"
MY_MAC = "02:00:00:00:00:01"


@pytest.fixture
def sw(construct):
    s = Switch.load(construct(PROG))
    s.table_add("MyIngress.ipv6_lpm", {"hdr.ipv6.dst_addr": Lpm(0xFD00_0001 << 96, 32)},
                "MyIngress.route", {"port": 3, "dmac": 0x02_00_00_00_00_AA})
    s.table_add("MyIngress.ipv6_lpm", {"hdr.ipv6.dst_addr": Lpm(0xFD00_0001_0002 << 80, 48)},
                "MyIngress.route", {"port": 4, "dmac": 0x02_00_00_00_00_BB})
    s.table_add("MyIngress.port_rewrite", {"port": Exact(4)}, "MyIngress.set_src",
                {"smac": 0x02_00_00_00_00_44})
    return s


def frame(dst: str, hlim: int = 64, payload: bytes = b"hello") -> Ether:
    return (Ether(dst=MY_MAC, src="02:00:00:00:00:09") / IPv6(src="fd00::9", dst=dst, hlim=hlim)
            / UDP(sport=1000, dport=4791) / payload)


def test_model_names_follow_p4c(construct) -> None:
    m = compile_file(construct(PROG)).model
    assert [t.name for t in m.tables] == ["MyIngress.my_mac", "MyIngress.ipv6_lpm", "MyIngress.port_rewrite"]
    lpm = m.table("MyIngress.ipv6_lpm")
    assert [(k.name, k.bitwidth, k.match_kind) for k in lpm.keys] == [("hdr.ipv6.dst_addr", 128, "lpm")]
    assert [a.name for a in lpm.actions] == ["MyIngress.route", "MyIngress.drop"]
    assert lpm.default_action == "MyIngress.drop" and lpm.size == 4096
    rw = m.table("MyIngress.port_rewrite")
    assert [(k.name, k.bitwidth) for k in rw.keys] == [("port", 9)]
    assert [(a.name, a.scope) for a in rw.actions] == [("MyIngress.set_src", "all"),
                                                        ("NoAction", "default_only")]
    mac = m.table("MyIngress.my_mac")
    assert mac.size == 16 and mac.default_action == "NoAction"
    route = m.action("MyIngress.route")
    assert [(p.name, p.bitwidth) for p in route.params] == [("port", 9), ("dmac", 48)]
    assert {a.name for a in m.actions} == {"NoAction", "MyIngress.set_port", "MyIngress.route",
                                           "MyIngress.drop", "MyIngress.set_src"}
    assert m.arch == "v1model"


def test_longest_prefix_routes_and_rewrites(sw) -> None:
    f = frame("fd00:1:2::5")
    out = sw.inject(1, bytes(f))
    want = f.copy()
    want[Ether].dst = "02:00:00:00:00:bb"
    want[Ether].src = "02:00:00:00:00:44"
    want[IPv6].hlim = 63
    assert out == [(4, bytes(want))]


def test_shorter_prefix_and_no_port_rewrite(sw) -> None:
    f = frame("fd00:1:7::5", hlim=2)
    out = sw.inject(1, bytes(f))
    want = f.copy()
    want[Ether].dst = "02:00:00:00:00:aa"
    want[IPv6].hlim = 1
    assert out == [(3, bytes(want))]


def test_default_action_drops_and_hop_limit_one_drops(sw) -> None:
    assert sw.inject(1, bytes(frame("fd00:9::1"))) == []
    assert sw.inject(1, bytes(frame("fd00:1:2::5", hlim=1))) == []
    assert sw.drop_count == 2


def test_unparsed_payload_follows_the_headers(sw) -> None:
    # not UDP: the parser stops after IPv6 and the rest of the frame is payload
    f = Ether(dst=MY_MAC, src="02:00:00:00:00:09") / IPv6(src="fd00::9", dst="fd00:1:2::5", nh=59) / (b"\x01" * 30)
    out = sw.inject(2, bytes(f))
    assert len(out) == 1 and out[0][1][54:] == b"\x01" * 30


def test_generated_source_is_readable(construct) -> None:
    src = compile_file(construct(PROG)).python_source
    assert "def a_MyIngress_route(st, L, ap_port, ap_dmac):" in src
    assert "int.from_bytes(data[pos:pos + 40], 'big')" in src
