"""Shapes of the generated fast path that a wrong specialisation would break: a
ternary table empty when the fast path is bound and filled (and emptied) later;
the deparser's grouped rebuild of a header whose written fields sit next to
unwritten ones at offsets that are not whole bytes; a field whose fresh value is
left out because a plain assignment sets it first. Every frame goes through a
switch with the fast path and one without; outputs are written out here."""

from __future__ import annotations

from pathlib import Path

from fast_toggle import compiled

from p4target import Switch
from p4target.runtime.entries import Ternary

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
// 3 + 5 + 7 + 9 + 4 + 4 = 32 bits: w1 and w2 are written, n1, n2 and n3 are not
header h_t { bit<3> n1; bit<5> w1; bit<7> n2; bit<9> w2; bit<4> n3; bit<4> k; }
struct hs_t { h_t h; }
struct m_t { bit<8> late; bit<9> add; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action bump(bit<9> v) { meta.add = v; }
    table qos { key = { hdr.h.k: ternary; } actions = { bump; NoAction; } default_action = NoAction; }
    apply {
        sm.egress_spec = 1;
        meta.add = 0;
        qos.apply();
        if (hdr.h.k == 1) {
            meta.late = 3;               // a plain assignment first: no fresh value before it
            hdr.h.w1 = (bit<5>)meta.late;
        }
        hdr.h.w2 = hdr.h.w2 + meta.add;
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def header(n1: int, w1: int, n2: int, w2: int, n3: int, k: int) -> bytes:
    v = (((((n1 << 5 | w1) << 7 | n2) << 9 | w2) << 4 | n3) << 4) | k
    return v.to_bytes(4, "big")


def test_empty_table_grouped_rebuild_and_late_value(tmp_path: Path) -> None:
    src = tmp_path / "shapes.p4"
    src.write_text(PROGRAM)
    progs = [compiled(src, fast) for fast in (True, False)]
    sws = [Switch(p, seed=1) for p in progs]
    for sw in sws:
        sw.inject(0, header(0, 0, 0, 0, 0, 0))  # binds the fast path (general path)
    text = sws[0].program.fast_source().text
    assert "if TL_I_qos:" in text  # the empty-table shortcut is there to be tested
    assert "f_meta__late = 0" not in text  # and the left-out fresh value

    def check(frame: bytes, want: bytes) -> None:
        before = sws[0].fast_packets
        outs = [sw.inject(0, frame) for sw in sws]
        assert outs[0] == outs[1] == [(1, want)], frame.hex()
        assert sws[0].fast_packets == before + 1

    ones = header(7, 0, 127, 0, 15, 2)  # every unwritten bit set, w1/w2 zero, k = 2
    check(ones + b"p", header(7, 0, 127, 0, 15, 2) + b"p")  # table empty: w2 + 0
    check(header(5, 31, 85, 511, 10, 1) + b"p", header(5, 3, 85, 511, 10, 1) + b"p")  # w1 = 3
    for sw in sws:
        sw.table_add("I.qos", {"hdr.h.k": Ternary(2, 0xF)}, "I.bump", {"v": 300}, priority=1)
    check(ones + b"p", header(7, 0, 127, 300, 15, 2) + b"p")  # the entry, added after the first packets
    check(header(0, 9, 0, 300, 0, 2) + b"p", header(0, 9, 0, 88, 0, 2) + b"p")  # 600 mod 512
    check(header(0, 9, 0, 300, 0, 3) + b"p", header(0, 9, 0, 300, 0, 3) + b"p")  # k = 3: miss
    for sw in sws:
        sw.table_delete("I.qos", {"hdr.h.k": Ternary(2, 0xF)}, priority=1)
    check(ones + b"p", header(7, 0, 127, 0, 15, 2) + b"p")  # empty again
