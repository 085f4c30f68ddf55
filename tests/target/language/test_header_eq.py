"""``==``/``!=`` on headers, header unions, stacks and structs (P4_16 8.17-8.19).

header_eq.stf gives the bits worked out by hand; the scapy test walks the field
values one by one (each field of v2 differing from v1 breaks equality).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4target import Switch
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"
PROG = P4 / "header_eq.p4"
ALL = 0xFF  # p, q equal: every bit
DIFF = 0xFF & ~4 & ~64  # p != q: neither p == q (4) nor s1 == s2 (64)


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "header_eq.stf")
    assert res.failures == [] and res.passed


@pytest.mark.parametrize(("v1", "v2", "r", "r2"), [
    ((9, 9), (9, 9), ALL, 1),
    ((9, 9), (8, 9), DIFF, 0),  # x differs
    ((9, 9), (9, 8), DIFF, 0),  # y differs
    ((255, 0), (255, 0), ALL, 1),
])
def test_scapy(v1, v2, r, r2) -> None:
    sw = Switch.load(PROG)
    f = Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01", type=0x0800) / Raw(bytes([*v1, *v2, 0, 0]))
    (port, out), = sw.inject(1, bytes(f))
    assert port == 2 and out[18] == r and out[19] == r2


def test_different_types_are_refused(tmp_path) -> None:
    from p4target.compiler import compile_file
    from p4target.errors import P4Error

    text = PROG.read_text().replace("if (u1 == u2) {\n            r = r | 8;",
                                    "if (u1.b == p) {\n            r = r | 8;")
    p = tmp_path / "bad.p4"
    p.write_text(text)
    with pytest.raises(P4Error) as ei:
        compile_file(p)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "u1.b == p" in ln)
    assert ei.value.location == f"{p}:{line}:18"  # the operator
    assert "operands of '==' have different types" in str(ei.value)
