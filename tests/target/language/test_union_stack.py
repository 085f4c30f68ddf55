"""Stacks of header unions: ``extract(s.next.member)`` fills the
member of element nextIndex and advances it; ``emit`` of the stack emits, element by
element, the member that is valid (P4_16 8.20, BMv2's deparser). Bytes by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4target import Switch
from p4target.compiler import compile_file
from p4target.errors import P4Error
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "union_stack.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "union_stack.stf")
    assert res.failures == [] and res.passed


def a(x: int) -> bytes:
    return bytes([0xAA, x])


def b(y: int) -> bytes:
    return bytes([0xBB]) + y.to_bytes(2, "big")


@pytest.mark.parametrize(("elems", "want"), [
    ([b(0x0100), b(0xFFFF)], bytes([2]) + b(0x0100) + b(0x0000)),  # us[1].b.y wraps
    ([a(7), a(8)], bytes([2]) + a(7) + a(8)),
    ([], bytes([0])),
])
def test_scapy(elems: list[bytes], want: bytes) -> None:
    sw = Switch.load(PROG)
    f = Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01", type=0x0800) / Raw(b"".join(elems) + b"\x01")
    (port, out), = sw.inject(1, bytes(f))
    assert port == 2 and out[14:] == want + b"\x01"


def test_extract_of_a_whole_union_element_is_refused(tmp_path: Path) -> None:
    text = PROG.read_text().replace("pkt.extract(hdr.us.next.b);", "pkt.extract(hdr.us.next);")
    p = tmp_path / "bad.p4"
    p.write_text(text)
    with pytest.raises(P4Error) as ei:
        compile_file(p)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "hdr.us.next)" in ln)
    assert ei.value.location.startswith(f"{p}:{line}:")
    assert "extract(s.next.<member>)" in str(ei.value)
