"""Parser value sets (P4_16 13.11) filled through the Switch API.

Expectations by hand: a frame takes a value-set case only when a member matches
every key (the ternary ether type and the range of the source's low byte), and an
empty set matches nothing; the tag byte says which state extracted it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import compile_file, fastgen
from p4target.errors import EntryError
from p4target.runtime.entries import Exact, Lpm, Range, Ternary

P4 = Path(__file__).parent / "p4"
PROG = P4 / "value_sets.p4"
DST = bytes.fromhex("000000000002")


def frame(ether_type: int, src_low: int) -> bytes:
    return DST + bytes.fromhex("0000000000") + bytes([src_low]) + ether_type.to_bytes(2, "big") + b"\x77\xca\xfe"


@pytest.mark.parametrize("fast", [True, False], ids=["fast-path", "general-path"])
def test_members_decide_the_case(fast: bool, monkeypatch) -> None:
    monkeypatch.setattr(fastgen, "FAST_PATH", fast)
    sw = Switch.load(PROG)
    # empty sets: no case matches, the byte after Ethernet stays payload
    assert sw.inject(1, frame(0x1234, 15)) == [(2, frame(0x1234, 15))]
    sw.value_set_set("MyParser.tagged", [[Exact(0x1234)], [Exact(0x0800)]])
    out = frame(0x1234, 15)
    assert sw.inject(1, out) == [(2, out[:14] + b"\x01" + out[15:])]
    sw.value_set_set("MyParser.special", [[Ternary(0x8800, 0xff00), Range(10, 20)]])
    for src_low, tag in ((15, 2), (10, 2), (20, 2), (21, None), (9, None)):
        f = frame(0x88ab, src_low)
        want = f if tag is None else f[:14] + bytes([tag]) + f[15:]
        assert sw.inject(1, f) == [(2, want)], (src_low, tag)
    assert sw.inject(1, frame(0x89ab, 15)) == [(2, frame(0x89ab, 15))]  # ternary bits differ
    sw.value_set_set("MyParser.tagged", [])
    assert sw.inject(1, frame(0x1234, 15)) == [(2, frame(0x1234, 15))]
    assert (sw.fast_packets > 0) == fast


def test_bad_members_leave_the_set_unchanged() -> None:
    sw = Switch.load(PROG)
    sw.value_set_set("MyParser.tagged", [[Exact(0x1234)]])
    with pytest.raises(EntryError, match="holds 4 members, not 5"):
        sw.value_set_set("MyParser.tagged", [[Exact(i)] for i in range(5)])
    with pytest.raises(EntryError, match="is a range field; Lpm does not fit it"):
        sw.value_set_set("MyParser.special", [[Exact(1), Lpm(0, 0)]])
    with pytest.raises(EntryError, match="does not fit in 16 bits"):
        sw.value_set_set("MyParser.tagged", [[Exact(0x10000)]])
    with pytest.raises(EntryError, match="no value set named 'tagged'"):
        sw.value_set_set("tagged", [])
    assert sw.value_set_members("MyParser.tagged") == [(Exact(0x1234),)]


def test_model() -> None:
    (tagged, special) = compile_file(PROG).model.value_sets
    assert (tagged.name, tagged.size, [(f.name, f.bitwidth) for f in tagged.fields]) == ("MyParser.tagged", 4,
                                                                                         [("", 16)])
    assert [(f.name, f.bitwidth, f.annotations) for f in special.fields] == [
        ("ether_type", 16, {"match": "ternary"}), ("src_low", 8, {"match": "range"})]


@pytest.mark.bmv2
def test_p4c_gives_the_same_names(p4c_names) -> None:
    theirs, ours = p4c_names(PROG)
    assert theirs["value_sets"] == ["MyParser.special", "MyParser.tagged"]
    assert ours == theirs
