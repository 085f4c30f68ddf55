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


HASHED = """
#include <core.p4>
#include <v1model.p4>
// the hash reads a, b, c: 80 bits from byte 1 of the frame, back to back
header h_t { bit<8> t; bit<32> a; bit<32> b; bit<16> c; bit<32> hash; }
struct hs_t { h_t h; }
struct m_t { bit<32> unused; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.h.t == 1) {
            hdr.h.b = 0x01020304;        // the header no longer is the frame's bytes
        }
        hash(hdr.h.hash, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w0xffffffff);
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_hash_reads_the_frame_while_the_header_is_unwritten(tmp_path: Path) -> None:
    """A hash over fields still the frame's bytes reads a slice of the frame; once a
    field was written (t == 1) it packs the fields. CRC-32 (zlib's, which BMv2's
    crc32 is) of a || b || c, reduced modulo the max 0xffffffff as v1model's hash
    does with base 0; a fast path that kept the slice after the write is caught."""
    import zlib

    from p4target.compiler import CompiledProgram
    from p4target.compiler.fastgen import FastSource

    src = tmp_path / "hashed.p4"
    src.write_text(HASHED)
    fast, plain = compiled(src, True), compiled(src, False)
    slice_ = "data[1:11] if not f_hdr__h___dirty else"
    assert slice_ in fast.fast_source().text
    good = fast.fast_source()
    bad = CompiledProgram(fast.model, fast.python_source, fast.errors, fast.path,
                          FastSource(good.text.replace(slice_, "data[1:11] if True else"), good.uses_clock))

    def frame(t: int) -> bytes:
        return bytes([t]) + (0xA1A2A3A4).to_bytes(4, "big") + (0xB1B2B3B4).to_bytes(4, "big") \
            + (0xC1C2).to_bytes(2, "big") + bytes(4) + b"payload"

    def want(t: int) -> bytes:
        b = 0x01020304 if t == 1 else 0xB1B2B3B4
        data = (0xA1A2A3A4).to_bytes(4, "big") + b.to_bytes(4, "big") + (0xC1C2).to_bytes(2, "big")
        h = zlib.crc32(data) % 0xFFFFFFFF
        return bytes([t]) + data + h.to_bytes(4, "big") + b"payload"

    outs = {}
    for name, prog in (("fast", fast), ("plain", plain), ("bad", bad)):
        sw = Switch(prog, seed=1)
        sw.inject(0, frame(0))  # binds the fast path (general path)
        outs[name] = [sw.inject(0, frame(t)) for t in (0, 1, 2)]
        if name != "plain":
            assert sw.fast_packets == 3
    assert outs["fast"] == outs["plain"] == [[(1, want(t))] for t in (0, 1, 2)]
    assert outs["bad"][1] != outs["plain"][1]  # the write must end the slice
    assert outs["bad"][0] == outs["plain"][0] and outs["bad"][2] == outs["plain"][2]


PACKED = """
#include <core.p4>
#include <v1model.p4>
// 4 + 12 + 16 + 8 + 8 + 128 = 176 bits, every field written when k == 1
header w_t { bit<4> a; bit<12> b; bit<16> c; bit<8> d; bit<8> k; bit<128> f; }
struct hs_t { w_t w; }
struct m_t { bit<8> unused; }
parser P(packet_in pk, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.w); transition accept; }
}
control V(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.w.k == 1) {
            hdr.w.a = 0xA;
            hdr.w.b = hdr.w.b + 1;
            hdr.w.c = 0xC0C1;
            hdr.w.d = hdr.w.d ^ 0xFF;
            hdr.w.k = 2;
            hdr.w.f = hdr.w.f + 1;
        }
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pk, in hs_t hdr) { apply { pk.emit(hdr.w); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_header_with_every_field_written_is_packed(tmp_path: Path) -> None:
    """A wide header the program writes whole is emitted by one struct pack of its
    fields (a and b as one 16-bit value, c, d, k, f as 16 bytes), or as it came
    while nothing wrote it; a pack whose values are in the wrong order is caught."""
    from p4target.compiler import CompiledProgram
    from p4target.compiler.fastgen import FastSource

    src = tmp_path / "packed.p4"
    src.write_text(PACKED)
    fast, plain = compiled(src, True), compiled(src, False)
    good = fast.fast_source()
    assert "_Struct('>HHBB16s').pack" in good.text
    args = "(f_hdr__w__a << 12) | f_hdr__w__b, f_hdr__w__c,"
    assert args in good.text
    bad = CompiledProgram(fast.model, fast.python_source, fast.errors, fast.path,
                          FastSource(good.text.replace(args, "f_hdr__w__c, (f_hdr__w__a << 12) | f_hdr__w__b,"),
                                     good.uses_clock))

    def frame(a: int, b: int, c: int, d: int, k: int, f: int) -> bytes:
        return ((a << 12 | b) << 16 | c).to_bytes(4, "big") + bytes([d, k]) + f.to_bytes(16, "big") + b"pl"

    f_max = (1 << 128) - 1
    cases = [  # (frame in, frame out)
        (frame(1, 0xFFF, 2, 0x0F, 1, f_max), frame(0xA, 0, 0xC0C1, 0xF0, 2, 0)),  # b and f wrap
        (frame(3, 0x123, 0x4567, 0x89, 1, 5), frame(0xA, 0x124, 0xC0C1, 0x76, 2, 6)),
        (frame(3, 0x123, 0x4567, 0x89, 7, 5), frame(3, 0x123, 0x4567, 0x89, 7, 5)),  # not written
    ]
    outs = {}
    for name, prog in (("fast", fast), ("plain", plain), ("bad", bad)):
        sw = Switch(prog, seed=1)
        sw.inject(0, cases[0][0])  # binds the fast path (general path)
        outs[name] = [sw.inject(0, fin) for fin, _ in cases]
        if name != "plain":
            assert sw.fast_packets == len(cases)
    assert outs["fast"] == outs["plain"] == [[(1, fout)] for _, fout in cases]
    assert outs["bad"][1] != outs["plain"][1] and outs["bad"][2] == outs["plain"][2]
