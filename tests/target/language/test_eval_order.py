"""Evaluation order and side effects (P4_16 8.1, 6.8).

Operands are evaluated left to right, ``&&``/``||`` short-circuit (the right
operand's call and its copy-out do not happen when the left decides), ``c ? x : y``
evaluates one branch, call arguments left to right; on the left of an assignment a
stack index computed by a call runs before the right-hand side, a plain index is
read after it (p4c's SideEffectOrdering, so BMv2's order). p4/eval_order.stf works
three packets out by hand; here the rules one by one on scapy-built frames.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scapy.fields import ByteField
from scapy.packet import Packet

from p4target import Switch

P4 = Path(__file__).parent / "p4"
PROG = P4 / "eval_order.p4"


class H(Packet):
    name = "h_t"
    fields_desc = [ByteField(n, 0) for n in ("k", "a", "b", "c", "d", "e", "f", "g", "i", "l", "m", "n",
                                              "q", "w", "t", "u", "v", "t2", "u2", "v2",
                                              "s0", "s1", "s2", "s3")]


@pytest.fixture(scope="module")
def sw() -> Switch:
    return Switch.load(PROG)


def run(sw: Switch, **fields) -> H:
    out = sw.inject(1, bytes(H(**fields)))
    assert len(out) == 1 and out[0][0] == 2
    return H(out[0][1])


def test_stf_through_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(PROG), str(P4 / "eval_order.stf")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout


def test_left_operand_is_read_before_the_right_ones_call(sw: Switch) -> None:
    r = run(sw, a=0x20)
    assert (r.a, r.b) == (0x21, 0x41)  # 0x20 + 0x21, not 0x21 + 0x21


@pytest.mark.parametrize(("k", "c", "e", "d"), [
    (1, 0x11, 0x21, 3),   # && evaluates mark(c); || evaluates mark(e)
    (2, 0x10, 0x20, 2),   # && stops at k == 1; || stops at k == 2
    (0, 0x10, 0x21, 2),   # && stops; || evaluates mark(e)
])
def test_and_or_short_circuit(sw: Switch, k: int, c: int, e: int, d: int) -> None:
    r = run(sw, k=k, c=0x10, e=0x20)
    assert (r.c, r.e, r.d) == (c, e, d)


@pytest.mark.parametrize(("k", "f", "g", "i"), [(3, 0x31, 0x31, 0x40), (4, 0x41, 0x30, 0x41)])
def test_conditional_evaluates_one_branch(sw: Switch, k: int, f: int, g: int, i: int) -> None:
    r = run(sw, k=k, g=0x30, i=0x40)
    assert (r.f, r.g, r.i) == (f, g, i)


def test_stack_indices_on_the_left(sw: Switch) -> None:
    r = run(sw, n=1, s0=9, s1=9, s2=9, s3=9)
    # s[incr(n)] = n: n -> 2 first, s[2] = 2; s[n] = incr(n): n -> 3, then s[3] = 3
    assert (r.n, r.s0, r.s1, r.s2, r.s3) == (3, 9, 9, 2, 3)


def test_arguments_left_to_right(sw: Switch) -> None:
    r = run(sw, l=0x07)
    assert (r.l, r.m) == (0x08, 0x78)  # pair(7, 8): x saw l before incr(l)


def test_extern_method_arguments_left_to_right() -> None:
    sw = Switch.load(PROG)
    r = run(sw, q=2)
    # rg.write(q, incr(q)): index 2 (q before the call), value 3; rg.read(w, 1) = 0
    assert (r.q, r.w) == (3, 0)
    assert sw.register_read("OIngress.rg", 2) == 3 and sw.register_read("OIngress.rg", 3) == 0


def test_initializer_lists_left_to_right() -> None:
    r = run(Switch.load(PROG), t=0x10, t2=0x20)
    assert (r.t, r.u, r.v) == (0x11, 0x10, 0x11)      # {t, incr(t)}: x saw t before the call
    assert (r.t2, r.u2, r.v2) == (0x21, 0x21, 0x21)   # {y = incr(t2), x = t2}: y's call first


def test_an_index_with_a_pure_call_also_runs_first(tmp_path: Path) -> None:
    """``s[ident(n)].v = incr(n)``: the index's call, pure as it is, runs before the
    right-hand side (p4c's SideEffectOrdering; p4c's gauntlet_index_7 sample)."""
    text = PROG.read_text().replace("hdr.s[incr(hdr.h.n)].v = hdr.h.n;", "hdr.s[ident(hdr.h.n)].v = incr(hdr.h.n);")
    text = text.replace("bool mark(inout bit<8> x) {", "bit<8> ident(in bit<8> x) { return x; }\nbool mark(inout bit<8> x) {")
    assert "ident(hdr.h.n)" in text
    prog = tmp_path / "pure_index.p4"
    prog.write_text(text)
    r = run(Switch.load(prog), n=1, s0=0xa0, s1=0xa1, s2=0xa2, s3=0xa3)
    # index 1 (n before incr), value 2; then s[n = 2 -> incr -> 3] = 3
    assert (r.s0, r.s1, r.s2, r.s3, r.n) == (0xa0, 2, 0xa2, 3, 3)
