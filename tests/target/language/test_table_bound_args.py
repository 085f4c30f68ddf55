"""Table action lists that bind directional arguments (P4_16
14.2.1.2-3): ``actions = { a(hdr.f); }``. The bound expressions are evaluated when
the action runs and out/inout ones copied out after it; the directionless
parameters come from the entry, the default action or the control plane; a
default action or entry repeats the bound arguments, which must be the list's.
p4/table_bound_args.stf works the bytes out by hand.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scapy.fields import ByteField
from scapy.packet import Packet

from p4target import Switch
from p4target.compiler import compile_file
from p4target.runtime.entries import Exact

P4 = Path(__file__).parent / "p4"
PROG = P4 / "table_bound_args.p4"


class H(Packet):
    name = "h_t"
    fields_desc = [ByteField(n, 0) for n in ("k", "f", "g", "r", "k2")]


def test_stf_through_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(PROG), str(P4 / "table_bound_args.stf")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout


@pytest.mark.parametrize(("k", "k2", "want"), [
    (1, 0, dict(f=0x35, g=0x41, r=0x00)),   # add_to(f, 5)
    (2, 0, dict(f=0x30, g=0x41, r=0x41)),   # copy_in(g, r): g as it is when the action runs
    (9, 0, dict(f=0x40, g=0x41, r=0x00)),   # default add_to(f, 0x10)
    (3, 7, dict(f=0x30, g=0x41 + 0xc8 - 0x100, r=0x77)),  # set_r; u: add_to(g, 0xc8) wraps
])
def test_scapy_frames_with_a_control_plane_entry(k: int, k2: int, want: dict[str, int]) -> None:
    sw = Switch.load(PROG)
    sw.table_add("BIngress.u", {"hdr.h.k2": Exact(7)}, "BIngress.add_to", {"d": 0xc8})
    out = sw.inject(1, bytes(H(k=k, f=0x30, g=0x40, r=0, k2=k2)))
    assert len(out) == 1 and out[0][0] == 2
    h = H(out[0][1])
    assert {n: getattr(h, n) for n in want} == want


def test_p4info_action_has_only_the_control_plane_parameter() -> None:
    model = compile_file(PROG).model
    assert [p.name for p in model.action("BIngress.add_to").params] == ["d"]
    assert [p.name for p in model.action("BIngress.copy_in").params] == []


@pytest.mark.parametrize(("old", "new", "message"), [
    ("add_to(hdr.h.f); copy_in", "add_to; copy_in", "parameter 'x' has a direction and must be bound here"),
    ("add_to(hdr.h.f); copy_in", "add_to(hdr.h.f, 1); copy_in", "cannot bind the directionless parameter 'd'"),
    ("default_action = add_to(hdr.h.f, 0x10);", "default_action = add_to(hdr.h.g, 0x10);",
     "'hdr.h.g' must be the action list's 'hdr.h.f'"),
])
def test_wrong_bindings_are_refused(refusal, old: str, new: str, message: str) -> None:
    text = PROG.read_text()
    assert old in text
    assert message in str(refusal(text.replace(old, new, 1)))
