"""``for`` loops (P4_16 1.2.4): both forms, break/continue, nesting, inside actions.

The expected bytes are worked out by hand in for_loops.stf (the comments there give
the arithmetic); the scapy test checks the same rules on other inputs.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from p4target import Switch
from p4target.errors import P4Error
from p4target.compiler import compile_file
from p4target.stf import run_stf_program

P4 = Path(__file__).parent / "p4"


PROG = P4 / "for_loops.p4"


def test_stf() -> None:
    res = run_stf_program(PROG, P4 / "for_loops.stf")
    assert res.failures == [] and res.passed


def frame(n: int, a: int, b: int, c: int, stack: tuple[int, int, int]) -> bytes:
    body = bytes([n, a, b, c, 0, 0, 0, 0, 0, 0, *stack])
    return bytes(Ether(dst="00:00:00:00:00:02", src="00:00:00:00:00:01", type=0x1234) / Raw(body))


@pytest.mark.parametrize(("n", "a", "b", "c", "stack", "want"), [
    # n=0: no iteration; a=0 b=1: one pair (0, 1); c=0: no bits; 255+255+255 = 765 mod 256 = 253
    (0, 0, 1, 0x00, (255, 255, 255), (0, 0, 28, 0x13, 6, 253)),
    # n=4: 0+1+3 (2 skipped, no break reached); a=0 b=8: pairs 0/8 1/7 2/6 3/5; c=0x01: one bit
    (4, 0, 8, 0x01, (0, 0, 7), (1, 4, 28, 0x43, 6, 7)),
    # n=255: stops at 5 as with n=10; a > b: no pair
    (255, 9, 2, 0x80, (1, 1, 1), (1, 8, 28, 0x03, 6, 3)),
])
def test_scapy_frames(n, a, b, c, stack, want) -> None:
    sw = Switch.load(PROG)
    out = sw.inject(1, frame(n, a, b, c, stack))
    assert len(out) == 1 and out[0][0] == 2
    got = bytes(out[0][1])[14:]
    assert got[:4] == bytes([n, a, b, c]) and got[10:] == bytes(stack)
    assert tuple(got[4:10]) == want


def test_fast_path_gives_up_and_says_so(caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger="p4target.compiler.fastgen"):
        assert compile_file(PROG).fast_source() is None
    assert any("no fast path (for loop at" in r.getMessage() for r in caplog.records)
    # the general path still forwards
    assert Switch.load(PROG).inject(1, frame(1, 0, 0, 0, (0, 0, 0)))[0][0] == 2


HEAD = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t s) { state start { transition accept; } }
control V(inout H h, inout M m) { apply { } }
control E(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) {
    apply {
"""
TAIL = """
    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize(("body", "line", "needle", "message"), [
    ("        break;", 13, "break", "'break' outside a for loop"),
    ("        if (true) { continue; }", 13, "continue", "'continue' outside a for loop"),
    ("        for (bit<8> i in h.h.a) { }", 13, "h.h.a", "a for-in loop over this expression"),
    ("        for (bit<8> i = 0; i; i = i + 1) { }", 13, "i;", "for condition must be bool"),
])
def test_refusals_name_the_place(refusal, body, line, needle, message) -> None:
    err = refusal(HEAD + body + TAIL)
    col = body.index(needle) + 1
    assert err.location.endswith(f":{line}:{col}"), str(err)
    assert message in str(err)


def test_for_in_over_an_existing_variable_is_refused(tmp_path) -> None:
    # for (x in ...) without a type: p4c's grammar has no such loop ("syntax error,
    # unexpected IN"), so it is refused here too, at the 'in'
    body = """        bit<8> x = 0;
        bit<8> sum = 0;
        for (x in 3 .. 5) {
            sum = sum + x;
        }
        h.h.a = sum + x;
"""
    text = HEAD + body + TAIL
    p = tmp_path / "forin.p4"
    p.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "for (x in" in ln)
    with pytest.raises(P4Error) as ei:
        Switch.load(p)
    assert str(ei.value) == f"{p}:{line}:16: error: a for-in loop declares its variable: for (bit<W> x in ...)"
