"""``@priority(N)`` on const entries, as p4c's BMv2 back end and
BMv2 give it: an annotated entry has priority N, the others their position in the
list (the first is 1), and the smaller number wins. The expectations are worked out
in p4/entry_priority.stf; here the same rule on frames built with scapy, and the
refusals.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scapy.packet import Packet
from scapy.fields import ByteField

from p4target import Switch

P4 = Path(__file__).parent / "p4"


PROG = P4 / "entry_priority.p4"


class KR(Packet):
    name = "h_t"
    fields_desc = [ByteField("k", 0), ByteField("r", 0)]


def test_stf_through_the_command() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "stf", str(PROG), str(P4 / "entry_priority.stf")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout


@pytest.mark.parametrize(("k", "r"), [
    (0x05, 2),   # e1 @priority(10) loses to e2 (position 2)
    (0x07, 3),   # e3 @priority(1) beats e2 (2)
    (0x0a, 2),   # e2 (2) beats e4 (position 4)
    (0xf8, 4),   # e4 alone
    (0x00, 2),   # e2 alone
    (0x15, 0xee),  # no entry: default
])
def test_scapy_frames(k: int, r: int) -> None:
    out = Switch.load(PROG).inject(1, bytes(KR(k=k, r=0x55)))
    assert len(out) == 1 and out[0][0] == 2
    assert KR(out[0][1]).r == r


def test_model_order_follows_bmv2(tmp_path) -> None:
    from p4target.compiler import compile_file
    t = next(t for t in compile_file(PROG).model.tables if t.name == "PIngress.pick")
    prios = [e.priority for e in t.const_entries]
    # higher wins in the model: e3 > e2 > e4 > e1
    assert prios[2] > prios[1] > prios[3] > prios[0] >= 1


@pytest.mark.parametrize("anno", ["@priority(x)", "@priority(1, 2)", "@priority(-1)"])
def test_bad_annotation_is_refused(refusal, anno: str) -> None:
    text = PROG.read_text().replace("@priority(10)", anno)
    err = str(refusal(text))
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if anno in ln)
    assert f":{line}:13: error: @priority(" in err
    assert "needs one non-negative integer constant" in err


def test_both_kinds_of_priority_are_refused(refusal) -> None:
    text = PROG.read_text().replace("const entries", "entries").replace(
        "@priority(10) 0x05", "priority = 5: 0x05").replace(
        "0x00 &&& 0xf0 : set(2);", "@priority(3) 0x00 &&& 0xf0 : set(2);")
    assert "use both @priority and 'priority ='" in str(refusal(text))


def test_an_annotation_after_the_action_counts_the_same(tmp_path) -> None:
    """``key : action @priority(N);`` (the annotation after the action, as p4c's
    table-entries-priority sample writes it) gives the same priorities."""
    from p4target.compiler import compile_file

    def prios(path: Path) -> list[int | None]:
        t = next(t for t in compile_file(path).model.tables if t.name == "PIngress.pick")
        return [e.priority for e in t.const_entries]

    moved = tmp_path / "moved.p4"
    moved.write_text(PROG.read_text().replace("@priority(10) 0x05 &&& 0xff : set(1);",
                                              "0x05 &&& 0xff : set(1) @priority(10);"))
    assert "set(1) @priority(10);" in moved.read_text()
    assert prios(moved) == prios(PROG)
