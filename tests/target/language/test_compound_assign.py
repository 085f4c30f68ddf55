"""Compound assignments ``+= -= *= /= %= &= |= ^= <<= >>= |+|= |-|=``:
``lhs op= rhs`` is ``lhs = lhs op rhs`` with the left-hand side evaluated once
(a stack index computed by a call runs once; the element read is the one written).
Expected values by hand from the operators' rules (P4_16 8.6, 8.7: wrap at the
width, saturate for ``|+|``/``|-|``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scapy.fields import ByteField, SignedByteField
from scapy.packet import Packet

from p4target import Switch

P4 = Path(__file__).parent / "p4"


PROG = P4 / "compound_assign.p4"


class H(Packet):
    name = "h_t"
    fields_desc = [ByteField(n, 0) for n in "abcdefghijklm"] + [SignedByteField("sa", 0), ByteField("n", 0),
                                                                 ByteField("s0", 0), ByteField("s1", 0)]


def test_stf_through_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(PROG), str(P4 / "compound_assign.stf")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout


def run(**fields) -> H:
    out = Switch.load(PROG).inject(1, bytes(H(**fields)))
    assert len(out) == 1 and out[0][0] == 2
    return H(out[0][1])


def test_operators_wrap_and_saturate() -> None:
    r = run(a=250, b=10, c=5, d=0x81, e=0x5a, f=0x5a, g=0x5a, h=0xff, i=0xff, j=3, k=200, l=255, m=255,
            sa=120, n=1, s0=1, s1=2)
    assert (r.a, r.c, r.d) == (4, 251, 0x83)          # 260 mod 256; 5-10 mod 256; 0x183 mod 256
    assert (r.e, r.f, r.g) == (0x0a, 0xda, 0xa5)
    assert (r.h, r.i) == (0xfc, 0x1f)                  # 0x3fc mod 256; 0xff >> 3
    assert (r.j, r.k) == (13, 190)                     # no saturation needed
    assert (r.l, r.m) == (36, 3)                       # 255 / 7, 255 % 7
    assert r.sa == 20
    assert (r.n, r.s0, r.s1) == (2, 1, 7)              # take() once: s[1] += 5


def test_left_hand_side_is_evaluated_once() -> None:
    r = run(n=0, s0=0x10, s1=0x20)
    # take() ran once: n = 1, and s[0] was both read and written (twice would have
    # read s[0] and written s[1], leaving n = 2)
    assert (r.n, r.s0, r.s1) == (1, 0x15, 0x20)


def test_type_mismatch_is_refused_with_the_place(refusal) -> None:
    text = PROG.read_text().replace("hdr.h.d *= 3;", "hdr.h.d *= 16w3;")
    err = str(refusal(text))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "*= 16w3" in ln)
    assert f":{line}:9: error: operands of '*' have different types bit<8> and bit<16>" in err
