"""Tables and v1model externs as compiled from tables_externs.p4, through the Switch."""

from __future__ import annotations

import pytest
from scapy.fields import ByteField, IntField, ShortField
from scapy.packet import Packet

from p4target import Switch
from p4target.compiler import compile_file
from p4target.model import ConstEntry, KeyMatch
from p4target.runtime.entries import Exact, Group, Member


class H(Packet):
    name = "h_t"
    fields_desc = [ByteField("op", 0), ByteField("k8", 0), ShortField("k16", 0), IntField("k32", 0),
                   ByteField("out1", 0), ByteField("out2", 0), ShortField("out16", 0),
                   ByteField("color", 0), ByteField("flags", 0)]


SET1, NOP_FLAG, LPM_HIT, MISS = 1, 2, 4, 8


@pytest.fixture(scope="module")
def prog():
    from tests.target.compiler.conftest import CONSTRUCTS
    return CONSTRUCTS / "tables_externs.p4"


@pytest.fixture
def sw(prog):
    return Switch.load(prog, seed=3)


def run(sw, port: int = 1, **fields) -> H:
    out = sw.inject(0, bytes(H(**fields)))
    assert [p for p, _ in out] == [port]
    return H(out[0][1])


def test_model_of_tables_and_externs(prog) -> None:
    m = compile_file(prog).model
    cls = m.table("Ing.classify")
    assert [(k.name, k.match_kind) for k in cls.keys] == [
        ("hdr.h.k16", "ternary"), ("k8r", "range"), ("hdr.h.k32", "optional")]
    assert [(a.name, a.scope) for a in cls.actions] == [("Ing.set1", "all"), ("Ing.nop", "default_only")]
    assert (cls.default_action, cls.default_is_const) == ("Ing.nop", True)
    # p4c: const entries of a table that needs priorities get them by order, first highest
    assert cls.const_entries == (
        ConstEntry((KeyMatch("ternary", 0x1200, 0xFF00), KeyMatch("range", 0, 9), KeyMatch("dontcare")),
                   "Ing.set1", (1,), 3),
        ConstEntry((KeyMatch("ternary", 0x1234, 0xFFFF), KeyMatch("dontcare"),
                    KeyMatch("optional", 5, 0xFFFFFFFF)), "Ing.set1", (2,), 2),
        ConstEntry((KeyMatch("dontcare"), KeyMatch("range", 10, 20), KeyMatch("dontcare")),
                   "Ing.set1", (3,), 1))
    lpm = m.table("Ing.lpm_const")
    assert [(a.name, a.scope) for a in lpm.actions] == [("Ing.set2", "all"), ("Ing.nop", "table_only")]
    assert (lpm.default_action, lpm.default_args, lpm.default_is_const) == ("Ing.set2", (0xEE,), False)
    assert lpm.const_entries == (ConstEntry((KeyMatch("lpm", 0x0A000000, 8),), "Ing.set2", (8,), None),
                                 ConstEntry((KeyMatch("lpm", 0x0A010000, 16),), "Ing.set2", (16,), None))
    counted = m.table("Ing.counted")
    assert (counted.direct_counter, counted.direct_meter) == ("Ing.dc", "Ing.dm")
    assert counted.default_action == "NoAction" and counted.actions[-1].scope == "default_only"
    assert m.table("Ing.profiled").implementation == "Ing.prof"
    sel = m.table("Ing.selected")
    assert sel.implementation == "Ing.sel"
    assert [k.name for k in sel.selector_keys] == ["hdr.h.k16", "hdr.h.k32"]
    assert m.table("Ing.hitmiss").size == 8
    ext = {e.name: e for e in m.externs}
    assert (ext["Ing.pkts"].kind, ext["Ing.pkts"].size, ext["Ing.pkts"].unit) == ("counter", 16, "packets_and_bytes")
    assert (ext["Ing.regs"].kind, ext["Ing.regs"].size, ext["Ing.regs"].bitwidth) == ("register", 8, 16)
    assert (ext["Ing.m"].kind, ext["Ing.m"].unit) == ("meter", "packets")
    assert (ext["Ing.dc"].kind, ext["Ing.dc"].tables) == ("direct_counter", ("Ing.counted",))
    assert (ext["Ing.dm"].kind, ext["Ing.dm"].unit) == ("direct_meter", "bytes")
    assert (ext["Ing.sel"].algorithm, ext["Ing.sel"].size, ext["Ing.sel"].selector_output_width) == (
        "crc16", 128, 16)
    assert ext["Ing.prof"].tables == ("Ing.profiled",)
    assert [(d.name, [(f.name, f.bitwidth) for f in d.fields]) for d in m.digests] == [
        ("learn_t", [("k8", 8), ("k16", 16)])]
    [ch] = m.controller_headers
    assert (ch.name, ch.type_name) == ("packet_in", "cpu_in_t")
    assert [(f.name, f.bitwidth) for f in ch.fields] == [("ingress_port", 9), ("pad", 7)]
    assert ch.fields[1].annotations == {"id": "2"}


@pytest.mark.parametrize("k16,k8,k32,out1,flags", [
    (0x12AB, 5, 0, 1, SET1),          # first entry: ternary + range
    (0x1234, 5, 5, 1, SET1),          # entries 1 and 2 both match: the first wins
    (0x1234, 50, 5, 2, SET1),         # only entry 2 (optional k32 == 5)
    (0x1234, 50, 6, 0, NOP_FLAG),     # optional mismatch: const default nop
    (0x9999, 15, 0, 3, SET1),         # third entry by range
])
def test_const_entries_and_switch_on_action_run(sw, k16, k8, k32, out1, flags) -> None:
    r = run(sw, op=0, k16=k16, k8=k8, k32=k32)
    assert r.out1 == out1
    assert r.flags & 3 == flags


def test_const_lpm_entries_hit_and_default_args(sw) -> None:
    r = run(sw, op=6, k32=0x0A010203)
    assert (r.out2, r.flags & LPM_HIT) == (16, LPM_HIT)
    assert run(sw, op=6, k32=0x0A020304).out2 == 8
    r = run(sw, op=6, k32=0x0B000000)
    assert (r.out2, r.flags & LPM_HIT) == (0xEE, 0)


def test_counter_register_and_meter(sw) -> None:
    run(sw, op=1, k8=3)
    run(sw, op=1, k8=3)
    assert sw.counter_read("Ing.pkts", 3) == (2, 2 * len(H()))
    run(sw, op=2, k8=6, k16=0xBEEF)
    assert sw.register_read("Ing.regs", 6) == 0xBEEF
    assert run(sw, op=3, k8=6).out16 == 0xBEEF
    assert run(sw, op=3, k8=60).out16 == 0        # out of range reads 0
    assert run(sw, op=4, k8=1).color == 0         # unconfigured meter: green


def test_direct_counter_and_direct_meter(sw) -> None:
    sw.table_add("Ing.counted", {"hdr.h.k8": Exact(9)}, "Ing.set2_metered", {"v": 0x42})
    r = run(sw, op=5, k8=9)
    assert (r.out2, r.color) == (0x42, 0)
    run(sw, op=5, k8=9)
    assert sw.direct_counter_read("Ing.counted", {"hdr.h.k8": Exact(9)})[0] == 2
    # a meter far below the packet size: the entry's colour, read in its action, is red
    sw.direct_meter_set("Ing.counted", {"hdr.h.k8": Exact(9)}, 1, 1, 1, 1)
    assert run(sw, op=5, k8=9).color == 2


def test_action_profile_and_selector(sw) -> None:
    sw.act_prof_add_member("Ing.prof", 1, "Ing.set1", {"v": 0x61})
    sw.table_add("Ing.profiled", {"hdr.h.k8": Exact(4)}, Member(1))
    assert run(sw, op=6, k8=4).out1 == 0x61
    sw.act_prof_add_member("Ing.sel", 1, "Ing.set1", {"v": 0x71})
    sw.act_prof_add_member("Ing.sel", 2, "Ing.set1", {"v": 0x72})
    sw.act_prof_add_group("Ing.sel", 10, [(1, 1, None), (2, 1, None)])
    sw.table_add("Ing.selected", {"hdr.h.k8": Exact(4)}, Group(10))
    seen = {run(sw, op=7, k8=4, k16=k16, k32=k16 * 7).out1 for k16 in range(64)}
    assert seen == {0x71, 0x72}


def test_hash_random_digest(sw) -> None:
    # identity hash of k8 ++ k16 modulo 2**16 is k16
    assert run(sw, op=8, k8=0x12, k16=0x3456).out16 == 0x3456
    vals = {run(sw, op=9).out1 for _ in range(60)}
    assert vals <= set(range(10, 21)) and len(vals) > 3
    run(sw, op=10, k8=7, k16=0x1234)
    assert ("learn_t", (7, 0x1234)) in [tuple(d) for d in sw.digests()]


def test_clone_and_truncate(sw) -> None:
    sw.clone_session_set(5, [(7, 0)])
    out = dict(sw.inject(0, bytes(H(op=11))))
    assert set(out) == {1, 7}
    assert out[7] == bytes(H(op=11))          # I2E clone: the packet as received
    out = sw.inject(0, bytes(H(op=12)))
    assert out == [(1, bytes(H(op=12))[:4])]


def test_assert_failure_drops_and_log_msg_runs(sw) -> None:
    assert run(sw, op=13, k8=13).k8 == 13
    before = sw.drop_count
    assert sw.inject(0, bytes(H(op=13, k8=12))) == []
    assert sw.drop_count == before + 1


def test_exit_and_return_end_the_control(sw) -> None:
    r = run(sw, op=14)
    assert r.flags == 0xAA                    # the last statement did not run
    r = run(sw, op=16)
    assert r.flags == 0xBB


def test_hit_miss_fallthrough_and_default_switch_case(sw) -> None:
    assert run(sw, op=15, k8=1).flags & MISS == MISS
    sw.table_add("Ing.hitmiss", {"hdr.h.k8": Exact(1)}, "Ing.set1", {"v": 9})
    r = run(sw, op=15, k8=1)
    assert (r.flags & MISS, r.out1) == (0, 9)
    assert run(sw, op=17).out2 == 0x18
    assert run(sw, op=18).out2 == 0x18
    assert run(sw, op=99).out2 == 0xDD


def test_resubmit_preserves_only_the_field_list(sw) -> None:
    r = run(sw, op=19)
    assert (r.out1, r.out2) == (0x77, 0)     # the second pass: kept preserved, lost reset


def test_set_valid_on_an_invalid_header_zeroes_it_as_bmv2_does(sw) -> None:
    assert run(sw, op=20, k8=5, out1=7, k32=0x0B000000) == H(op=20, flags=NOP_FLAG)
    r = run(sw, op=21, k8=5, out1=7, k32=0x0B000000)
    assert (r.k8, r.out1, r.out2) == (5, 7, 0xEE)


def test_entries_with_explicit_and_implied_priorities(prog, sw) -> None:
    m = compile_file(prog).model
    t = m.table("Ing.prio_t")
    assert [(e.args, e.priority) for e in t.const_entries] == [((1,), 100), ((2,), 90), ((3,), 95)]
    assert any("installs 'entries' as const entries" in w for w in m.warnings)
    assert run(sw, op=22, k8=0x11).out1 == 1     # 100 beats the catch-all's 95
    assert run(sw, op=22, k8=0x12).out1 == 3     # 95 beats the exact match's implied 90
    assert run(sw, op=22, k8=0x40).out1 == 3


def test_signed_action_parameters_from_the_control_plane(sw) -> None:
    sw.table_add("Ing.signed_t", {"hdr.h.k8": Exact(1)}, "Ing.widen", {"d": 0xFE})
    r = run(sw, op=23, k8=1)
    assert (r.out1, r.out16) == (0xFD, 0xFFFE)      # direct call with -3, then the entry's -2


def test_assigning_a_whole_parameter(sw) -> None:
    assert run(sw, op=24, k8=3).out1 == 0x24
