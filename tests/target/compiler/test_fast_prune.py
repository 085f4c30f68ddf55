"""The fast path's pruned program (p4target/compiler/fast_prune.py): control code
that always gives up becomes ``exit``, user metadata only ever set to the literal 0
is 0, and the ifs and checksum updates that test it against another constant are
dropped. Each frame below goes through a switch with the fast path and one without;
their outputs must be the ones written out here, and the frames the fast path may
finish must be exactly the ones it finished.
"""

from __future__ import annotations

from pathlib import Path

from fast_toggle import compiled

from p4target import Switch
from p4target.compiler.fast_prune import prune_for_fast, zero_places
from p4target.runtime.entries import Exact

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; bit<8> d; bit<16> ck; }
header t_t { bit<16> x; bit<16> y; }
struct hs_t { h_t h; t_t t; }
struct m_t { bit<1> zero; bit<1> by_field; bit<1> by_action; bit<8> counted; bit<1> late; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); pk.extract(hdr.t); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action set_flag(bit<1> v) { meta.by_action = v; }
    table flags { key = { hdr.h.op: exact; } actions = { set_flag; NoAction; } default_action = NoAction; }
    apply {
        meta.zero = 0;
        meta.by_action = 0;              // also set by an action: not always 0
        meta.counted = 0;
        sm.egress_spec = 1;
        meta.by_field = hdr.h.b[0:0];
        meta.counted = meta.counted + 1;
        if (hdr.h.op == 1) {             // always gives up: t.x is never written on the fast path
            hdr.t.x = 0xAAAA;
            meta.zero = 1;
            truncate(9);
        }
        if (hdr.h.op == 2) {             // a return before the truncate: not pruned
            if (hdr.h.a == 0) { return; }
            hdr.t.y = 0xBBBB;
            truncate(9);
        }
        flags.apply();
        if (meta.zero == 1) { hdr.h.c = 0x11; }        // never on the fast path
        if (meta.by_field == 1) { hdr.h.c = 0x22; }    // a field's value: runs
        if (meta.by_action != 0) { hdr.h.c = 0x33; }   // an action's parameter: runs
        if (meta.counted == 1) { hdr.h.d = 0x44; }     // not a plain 0: runs
        if (meta.late != 0) { hdr.h.d = 0x55; }        // meta.late is only ever 0: never
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply { if (hdr.h.op == 9) { meta.late = 0; } }
}
control C(inout hs_t hdr, inout m_t meta) {
    apply {
        update_checksum(meta.zero == 1, { hdr.h.a }, hdr.h.ck, HashAlgorithm.csum16);
        update_checksum(meta.by_field == 1 && hdr.h.a != 7, { hdr.h.op, hdr.h.a }, hdr.h.ck, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); pk.emit(hdr.t); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def switches(tmp_path: Path) -> list[Switch]:
    src = tmp_path / "prune.p4"
    src.write_text(PROGRAM)
    progs = [compiled(src, fast) for fast in (True, False)]
    sws = [Switch(p, seed=3) for p in progs]
    for sw in sws:
        sw.table_add("I.flags", {"hdr.h.op": Exact(3)}, "I.set_flag", {"v": 1})
        sw.inject(0, frame(0))  # the first frame binds the fast path and takes the general one
    return sws


def frame(op: int, a: int = 0, b: int = 0, ck: int = 0, x: int = 0x1111, y: int = 0x2222) -> bytes:
    return bytes([op, a, b, 0, 0]) + ck.to_bytes(2, "big") + x.to_bytes(2, "big") + y.to_bytes(2, "big") + b"pay"


def test_pruned_program_gives_what_the_general_path_gives(tmp_path: Path) -> None:
    sws = switches(tmp_path)
    d44 = 0x44  # meta.counted is 1 for every packet
    cases = [
        # (frame, expected output, finished on the fast path)
        (frame(0), bytes([0, 0, 0, 0, d44]) + b"\0\0" + b"\x11\x11\x22\x22pay", True),
        # b odd: c = 0x22 and ck = ~(op << 8 | a) (csum16 of two bytes)
        (frame(0, a=5, b=1), bytes([0, 5, 1, 0x22, d44]) + (0xFFFF - 5).to_bytes(2, "big")
         + b"\x11\x11\x22\x22pay", True),
        (frame(0, a=7, b=1, ck=0x1234), bytes([0, 7, 1, 0x22, d44]) + b"\x12\x34\x11\x11\x22\x22pay", True),
        # op 1: the general path writes t.x, sets meta.zero (c = 0x11, ck = ~(a << 8)), truncates to 9
        (frame(1, a=2), bytes([1, 2, 0, 0x11, d44]) + (0xFFFF - 0x0200).to_bytes(2, "big") + b"\xaa\xaa", False),
        # op 2, a = 0: returns before the truncate, on the fast path, nothing after it in
        # ingress runs (b odd: the checksum update still does, ck = ~(2 << 8))
        (frame(2, a=0, b=1), bytes([2, 0, 1, 0, 0]) + (0xFFFF - 0x0200).to_bytes(2, "big")
         + b"\x11\x11\x22\x22pay", True),
        # op 2, a = 1: y written, truncated to 9 (t.x's two bytes)
        (frame(2, a=1), bytes([2, 1, 0, 0, d44]) + b"\0\0\x11\x11", False),
        # op 3: the table's action sets meta.by_action
        (frame(3), bytes([3, 0, 0, 0x33, d44]) + b"\0\0\x11\x11\x22\x22pay", True),
    ]
    for f, want, fast in cases:
        before = sws[0].fast_packets
        outs = [sw.inject(0, f) for sw in sws]
        assert outs[0] == outs[1] == [(1, want)], f
        assert sws[0].fast_packets - before == int(fast), f


def test_what_is_pruned(tmp_path: Path) -> None:
    """Only meta.zero and meta.late count as always 0 (by_field, by_action and
    counted are written other ways); the pruned ingress has no write of t.x and no
    0x11/0x55 store, and keeps t.y's (a return may leave before its truncate)."""
    sws = switches(tmp_path)
    ast = sws[0].program._fast_builder.args[0]
    pruned = prune_for_fast(ast)
    blocks = ["P", "V", "I", "E", "C", "D"]
    assert zero_places(pruned, blocks) == {("meta", "zero"), ("meta", "late")}
    stores = {x.strip().rsplit(" = ", 1)[-1] for x in sws[0].program.fast_source().text.splitlines()
              if " = " in x}
    assert str(0xAAAA) not in stores and str(0x11) not in stores and str(0x55) not in stores
    assert {str(0xBBBB), str(0x22), str(0x33), str(0x44)} <= stores
