"""Tables, selectors, direct resources and const entries of a real program,
written through the Switch API and checked with scapy-built packets."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from scapy.fields import ByteField, IntField, ShortField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

from p4target.errors import EntryError
from p4target.runtime.entries import Exact, Group, Lpm, Member, Range, Ternary

P4 = Path(__file__).parent / "p4" / "tables_ops.p4"
DST = 0x02_00_00_00_00_0D
SPRAY, ACL, ROUTE, FIXED, SPRAY_PACKET = 1, 2, 3, 4, 5


class Probe(Packet):
    name = "probe"
    fields_desc = [ByteField("kind", 0), ByteField("colour", 0), ShortField("flow", 0), IntField("addr", 0)]


bind_layers(Ether, Probe, type=0x88B6)


def mac(value: int) -> str:
    return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))


def probe(kind: int, flow: int = 0, addr: int = 0, src: int = 0x020000000005, colour: int = 0) -> bytes:
    return bytes(Ether(dst=mac(DST), src=mac(src), type=0x88B6) / Probe(kind=kind, flow=flow, addr=addr,
                                                                          colour=colour))


@pytest.fixture(scope="module")
def program():
    from p4target.compiler import compile_file

    return compile_file(P4)


@pytest.fixture
def sw(program):
    from p4target import Switch

    return Switch(program, seed=3)


def spray_setup(sw, profile: str = "TIngress.flow_sel", table: str = "TIngress.spray") -> None:
    for port in (1, 2, 3, 4):
        sw.act_prof_add_member(profile, port, "TIngress.fwd", {"port": port})
    sw.act_prof_add_group(profile, 100, [(port, 1, port) for port in (1, 2, 3, 4)])
    sw.table_add(table, {"hdr.eth.dst": Exact(DST)}, Group(100))


def ports_per_flow(sw, flows) -> list[int]:
    out = []
    for flow in flows:
        res = sw.inject(9, probe(SPRAY, flow=flow))
        assert len(res) == 1, f"flow {flow}: {res} drops {dict(sw.drops)}"
        out.append(res[0][0])
    return out


def test_selector_per_flow_fails_over_on_watch_port_and_back(sw) -> None:
    spray_setup(sw)
    # spread over all 16 bits: crc16 is linear, so flows 0..63 (6 low bits) would
    # only ever reach two of four members, on BMv2 as here
    flows = range(0, 65536, 1021)
    before = ports_per_flow(sw, flows)
    assert before == ports_per_flow(sw, flows)
    assert set(before) == {1, 2, 3, 4}
    sw.set_port_status(3, False)
    during = ports_per_flow(sw, flows)  # every packet still leaves: none is sent to port 3
    assert set(during) == {1, 2, 4}
    assert sw.drop_count == 0
    sw.set_port_status(3, True)
    assert ports_per_flow(sw, flows) == before
    assert [e.group for e in sw.table_entries("TIngress.spray")] == [100]


def test_selector_per_packet_sprays_one_flow(sw) -> None:
    spray_setup(sw, "TIngress.packet_sel", "TIngress.spray_per_packet")
    seen = Counter(sw.inject(9, probe(SPRAY_PACKET, flow=7))[0][0] for _ in range(200))
    assert set(seen) == {1, 2, 3, 4} and min(seen.values()) > 20


def test_member_entry_and_profile_errors(sw) -> None:
    sw.act_prof_add_member("TIngress.flow_sel", 1, "TIngress.fwd", {"port": 6})
    sw.table_add("TIngress.spray", {"hdr.eth.dst": DST}, Member(1))
    assert [p for p, _ in sw.inject(9, probe(SPRAY))] == [6]
    sw.act_prof_modify_member("TIngress.flow_sel", 1, "TIngress.fwd", {"port": 7})
    assert [p for p, _ in sw.inject(9, probe(SPRAY))] == [7]
    for call, kind in (
        (lambda: sw.act_prof_add_member("TIngress.nope", 2, "TIngress.fwd", {"port": 1}), "invalid"),
        (lambda: sw.act_prof_add_member("TIngress.flow_sel", 1, "TIngress.fwd", {"port": 1}), "exists"),
        (lambda: sw.act_prof_delete_member("TIngress.flow_sel", 1), "precondition"),
        (lambda: sw.table_add("TIngress.route", {"hdr.probe.addr": Lpm(0, 8)}, Member(1)), "invalid"),
        (lambda: sw.table_add("TIngress.spray", {"hdr.eth.dst": 1}, "TIngress.fwd", {"port": 1}), "invalid"),
    ):
        with pytest.raises(EntryError) as err:
            call()
        assert err.value.kind == kind, str(err.value)
    assert len(sw.table_entries("TIngress.spray")) == 1


def test_acl_priorities_direct_counter_and_meter(sw) -> None:
    sw.table_add("TIngress.acl", {"hdr.eth.src": Ternary(0x020000000000, 0xFFFF00000000),
                                  "hdr.probe.flow": Range(100, 199)}, "TIngress.acl_fwd", {"port": 2}, priority=10)
    sw.table_add("TIngress.acl", {"hdr.probe.flow": Range(0, 1000)}, "TIngress.acl_fwd", {"port": 3}, priority=1)
    assert [p for p, _ in sw.inject(9, probe(ACL, flow=150))] == [2]
    assert [p for p, _ in sw.inject(9, probe(ACL, flow=150, src=0x0A0000000001))] == [3]
    assert [p for p, _ in sw.inject(9, probe(ACL, flow=500))] == [3]
    assert sw.inject(9, probe(ACL, flow=5000)) == []  # miss: acl_miss drops
    size = len(probe(ACL))
    assert sw.direct_counter_read("TIngress.acl", {"hdr.probe.flow": Range(0, 1000)}, priority=1) == (2, 2 * size)
    # 1 packet/s committed (burst 1), 2 packets/s peak (burst 2): green, yellow, red
    sw.direct_meter_set("TIngress.acl", {"hdr.eth.src": Ternary(0x020000000000, 0xFFFF00000000),
                                         "hdr.probe.flow": Range(100, 199)}, 1, 1, 2, 2, priority=10)
    colours = [Probe(sw.inject(9, probe(ACL, flow=120))[0][1][14:]).colour for _ in range(3)]
    assert colours == [0, 1, 2]
    with pytest.raises(EntryError) as err:
        sw.table_add("TIngress.acl", {"hdr.probe.flow": Range(0, 1)}, "TIngress.acl_miss", {}, priority=2)
    assert err.value.kind == "invalid" and "defaultonly" in str(err.value)
    with pytest.raises(EntryError) as err:
        sw.table_add("TIngress.acl", {"hdr.probe.flow": Range(0, 1)}, "TIngress.acl_fwd", {"port": 1})
    assert err.value.kind == "invalid" and "priority" in str(err.value)
    for i in range(6):
        sw.table_add("TIngress.acl", {"hdr.probe.flow": Range(i, i)}, "TIngress.acl_fwd", {"port": 1}, priority=2)
    with pytest.raises(EntryError) as err:
        sw.table_add("TIngress.acl", {"hdr.probe.flow": Range(9, 9)}, "TIngress.acl_fwd", {"port": 1}, priority=2)
    assert err.value.kind == "full"


def test_lpm_route_longest_prefix(sw) -> None:
    sw.table_add("TIngress.route", {"hdr.probe.addr": Lpm(0x0A000000, 8)}, "TIngress.fwd", {"port": 1})
    sw.table_add("TIngress.route", {"hdr.probe.addr": Lpm(0x0A010000, 16)}, "TIngress.fwd", {"port": 2})
    sw.table_add("TIngress.route", {"hdr.probe.addr": Lpm(0x0A010200, 24)}, "TIngress.fwd", {"port": 3})
    got = [[p for p, _ in sw.inject(9, probe(ROUTE, addr=a))] for a in (0x0A010203, 0x0A010303, 0x0A020304, 0x0B000000)]
    assert got == [[3], [2], [1], []]
    sw.table_delete("TIngress.route", {"hdr.probe.addr": Lpm(0x0A010200, 24)})
    assert [p for p, _ in sw.inject(9, probe(ROUTE, addr=0x0A010203))] == [2]


def test_const_entries_and_const_default(sw) -> None:
    assert [p for p, _ in sw.inject(9, probe(FIXED, flow=2))] == [12]
    assert sw.inject(9, probe(FIXED, flow=3)) == []
    entries = sw.table_entries("TIngress.fixed")
    assert sorted((e.match["hdr.probe.flow"].value, e.params["port"], e.is_const) for e in entries) == [
        (1, 11, True), (2, 12, True)]
    for call in (lambda: sw.table_add("TIngress.fixed", {"hdr.probe.flow": 9}, "TIngress.fwd", {"port": 1}),
                 lambda: sw.table_delete("TIngress.fixed", {"hdr.probe.flow": 1}),
                 lambda: sw.table_set_default("TIngress.fixed", "TIngress.fwd", {"port": 1})):
        with pytest.raises(EntryError) as err:
            call()
        assert err.value.kind == "const"
    assert [p for p, _ in sw.inject(9, probe(FIXED, flow=1))] == [11]
