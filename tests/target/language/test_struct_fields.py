"""Struct-typed header fields, lookahead<struct>, tuple variables, `_` out arguments
and serializable-enum keyset values, against bytes worked out by
hand from the P4_16 spec (7.2.2: a struct in a header is serialized inline in field
order; 8.11 tuples; 6.8 `_` for out arguments)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.fields import BitField, ByteField, ShortField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from p4target import Switch
from p4target.compiler import compile_file
from p4target.errors import P4Error
from p4target.runtime.entries import Exact
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "struct_fields.p4"


class Rec(Packet):
    """rec_t as written in struct_fields.p4, one scapy field per P4 leaf field."""
    name = "rec"
    fields_desc = [ByteField("kind", 0), ShortField("hi", 0), ByteField("lo", 0),
                   BitField("a", 0, 4), BitField("b", 0, 4), ByteField("c", 0),
                   ByteField("r1", 0), ByteField("r2", 0), ByteField("r3", 0),
                   ByteField("r4", 0), ByteField("r5", 0)]


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "struct_fields.stf")
    assert res.failures == [] and res.passed


@pytest.mark.parametrize(("kind", "r2"), [(0x01, 0xA1), (0x10, 0xC0), (0x1F, 0xC0), (0x20, 0xFF)])
def test_scapy(kind: int, r2: int) -> None:
    sw = Switch.load(PROG)
    sw.table_add("MyIngress.by_addr", {"hdr.rec.addr.hi": Exact(0x0102), "hdr.rec.addr.lo": Exact(3)},
                 "MyIngress.set_r1", {"v": 0x77})
    rec = Rec(kind=kind, hi=0x0102, lo=3, a=0x9, b=0x6, c=0x2D)
    f = Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01", type=0x0800) / Raw(bytes(rec) + b"xy")
    (port, out), = sw.inject(1, bytes(f))
    got = Rec(out[14:14 + len(rec)])
    assert (got.kind, got.hi, got.lo, got.a, got.b, got.c) == (kind, 0x0102, 3, 0x6, 0x9, 0x2D)
    # r3 = c + low byte of hi + low nibble of c; r4/r5: the lookahead struct saw kind, hi's top byte
    assert (got.r1, got.r2, got.r3) == (0x77, r2, (0x2D + 0x02 + 0xD) & 0xFF)
    assert (got.r4, got.r5) == (0x01, kind)
    assert out[14 + len(rec):] == b"xy"


def write(tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    text = PROG.read_text()
    assert old in text
    text = text.replace(old, new)
    p = tmp_path / "bad.p4"
    p.write_text(text)
    return p, text


@pytest.mark.parametrize(("old", "new", "needle", "message"), [
    ("bit<4> lo;\n", "bit<4> lo;\n        t[0] = 1;\n", "t[0] = 1", "assigning to a tuple element"),
    ("header skip_t { bit<16> x; }", "header skip_t { bit<16> x; addr_t s; varbit<16> v; }",
     "skip_t", "a header with both a varbit field and a struct-typed field"),
])
def test_refusals(tmp_path: Path, old: str, new: str, needle: str, message: str) -> None:
    p, text = write(tmp_path, old, new)
    with pytest.raises(P4Error) as ei:
        compile_file(p)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)
    col = text.splitlines()[line - 1].index(needle) + 1
    assert ei.value.location == f"{p}:{line}:{col}", str(ei.value)
    assert message in str(ei.value)
