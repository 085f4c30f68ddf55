"""Control-local initializers that call functions.

``bit<8> w = f(hdr.h.a);`` with ``f(inout bit<8> x)``: the call and its copy-out
run where the control starts, every time it runs, before the apply block (P4_16
11.2: initializers may contain any expression). Expected values by hand: ``f``
increments its argument and returns twice the new value; later initializers see
earlier ones (``v = w + f(hdr.h.c)``); a parser-local one runs before the start state.
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


PROG = P4 / "local_init_calls.p4"


class ABC(Packet):
    name = "h_t"
    fields_desc = [ByteField("a", 0), ByteField("b", 0), ByteField("c", 0), ByteField("p", 0)]


def test_stf_through_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(PROG), str(P4 / "local_init_calls.stf")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout


@pytest.mark.parametrize(("a", "c", "want"), [
    (0, 0, (1, 2, 1 ^ 4)),              # w = 2, c -> 1, v = 2 + 2 = 4
    (0x40, 0x01, (0x41, 0x82, 0x02 ^ 0x86)),  # w = 0x82, c -> 2, v = 0x82 + 4 = 0x86
    (0xfe, 0xfe, (0xff, 0xfe, 0xff ^ 0xfc)),  # w = 0x1fe -> 0xfe, v = 0xfe + 0xfe -> 0xfc
])
def test_scapy_frames(a: int, c: int, want: tuple[int, int, int]) -> None:
    sw = Switch.load(PROG)
    for _ in range(2):  # the initializers run again for every packet
        out = sw.inject(1, bytes(ABC(a=a, b=0x77, c=c)))
        assert len(out) == 1 and out[0][0] == 2
        h = ABC(out[0][1])
        assert (h.a, h.b, h.c) == want
        assert h.p == 3  # the parser's local initializer ran once per packet too
