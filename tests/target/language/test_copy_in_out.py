"""Copy-in/copy-out (P4_16 6.8).

- An inout argument of header, struct or stack type is a copy: a write to the
  original through another name while the action holds the copy is lost when the
  copy is copied out (p4/copy_inout.stf works the bytes out).
- ``exit`` in an action with out/inout parameters still copies them out (12.5),
  also from a nested call, and then nothing after the call runs
  (p4/exit_copy_out.stf).
"""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

import pytest
from scapy.fields import ByteField
from scapy.packet import Packet

from p4target import Switch

P4 = Path(__file__).parent / "p4"


class K(Packet):
    name = "h_t"
    fields_desc = [ByteField(n, 0) for n in ("k", "a", "b", "c", "d")]


@pytest.mark.parametrize("name", ["copy_inout", "exit_copy_out"])
def test_stf_through_the_command(name: str) -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(P4 / f"{name}.p4"),
                          str(P4 / f"{name}.stf")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout


@pytest.mark.parametrize(("h", "g", "s", "u"), [((0, 0), (1, 1), (2, 3), 0xff),
                                               ((0x11, 0x22), (0x77, 0), (0x55, 0x66), 0x87)])
def test_composite_inout_is_a_copy(h, g, s, u) -> None:
    sw = Switch.load(P4 / "copy_inout.p4")
    out = sw.inject(1, bytes([*h, *g, *s, u]))
    # h.b, s[1] and u.x come from the copies; h.a, s[0], m.p.x keep their values (the
    # writes through hdr/m were overwritten); g was invalidated through its copy
    assert out == [(2, bytes([h[0], 0x22, s[0], 0x66, (u + 1) & 0xff, 0x01, 0x44]))]


@pytest.mark.parametrize(("k", "a", "want"), [
    (1, 0xff, dict(a=0x00, b=0x5a, c=0x33, d=0x00)),   # copied out, then exit
    (2, 0x0f, dict(a=0x00, b=0x22, c=0x5a, d=0x00)),   # 0x0f ^ 0xf0 = 0xff, + 1 wraps to 0
    (3, 0x0f, dict(a=0x0f, b=0x22, c=0x33, d=0xee)),   # no action: the rest of apply runs
])
def test_exit_copies_out_first(k: int, a: int, want: dict[str, int]) -> None:
    sw = Switch.load(P4 / "exit_copy_out.p4")
    out = sw.inject(1, bytes(K(k=k, a=a, b=0x22, c=0x33, d=0)))
    assert len(out) == 1 and out[0][0] == 2
    h = K(out[0][1])
    assert {n: getattr(h, n) for n in want} == want


def test_exit_in_a_function_is_refused(refusal) -> None:
    text = (P4 / "exit_copy_out.p4").read_text().replace(
        "control XVerify", "bit<8> f(inout bit<8> x) {\n    exit;\n    return x;\n}\ncontrol XVerify")
    err = str(refusal(text))
    line = text.splitlines().index("    exit;") + 1
    assert f":{line}:5: error: exit is not allowed in a function" in err
