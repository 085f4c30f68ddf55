"""P4Runtime ValueSetEntry writes (P4Runtime 9.5) through the server's write path:
the ids come from the P4Info the target builds, the bytes are P4Runtime's, the frames
go through the switch and show which parser state took them (worked out by hand as
in tests/target/language/test_value_sets.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target import Switch
from p4target.p4runtime.errors import P4RTError
from p4target.p4runtime.schema import build_schema
from p4target.p4runtime.state import PipelineState
from p4target.p4runtime.write import apply_update
from p4target.runtime.entries import Exact, Range, Ternary

PROG = Path(__file__).resolve().parents[1] / "language" / "p4" / "value_sets.p4"


def frame(ether_type: int, src_low: int) -> bytes:
    return bytes(5) + b"\x02" + bytes(5) + bytes([src_low]) + ether_type.to_bytes(2, "big") + b"\x77\xca\xfe"


def tag(f: bytes, v: int) -> bytes:
    return f[:14] + bytes([v]) + f[15:]


def update(vs_id: int, members: list[list[p4runtime_pb2.FieldMatch]],
           kind: int = p4runtime_pb2.Update.MODIFY) -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=kind)
    entry = u.entity.value_set_entry
    entry.value_set_id = vs_id
    for fms in members:
        entry.members.add().match.extend(fms)
    return u


@pytest.fixture
def target() -> tuple[Switch, PipelineState, dict[str, int]]:
    sw = Switch.load(PROG)
    schema = build_schema(sw.model)
    ids = {v.preamble.name: v.preamble.id for v in schema.p4info.value_sets}
    return sw, PipelineState(schema, None, b""), ids


def test_members_written_over_p4runtime_decide_the_case(target) -> None:
    sw, st, ids = target
    exact = p4runtime_pb2.FieldMatch(field_id=1, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x12\x34"))
    apply_update(sw, st, update(ids["MyParser.tagged"], [[exact]]))
    assert sw.value_set_members("MyParser.tagged") == [(Exact(0x1234),)]
    assert sw.inject(1, frame(0x1234, 15)) == [(2, tag(frame(0x1234, 15), 1))]
    ternary = p4runtime_pb2.FieldMatch(field_id=1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x88\x00",
                                                                                           mask=b"\xff\x00"))
    in_range = p4runtime_pb2.FieldMatch(field_id=2, range=p4runtime_pb2.FieldMatch.Range(low=b"\x0a", high=b"\x14"))
    apply_update(sw, st, update(ids["MyParser.special"], [[ternary, in_range]]))
    assert sw.value_set_members("MyParser.special") == [(Ternary(0x8800, 0xff00), Range(10, 20))]
    assert sw.inject(1, frame(0x88ab, 20)) == [(2, tag(frame(0x88ab, 20), 2))]
    assert sw.inject(1, frame(0x88ab, 21)) == [(2, frame(0x88ab, 21))]
    # a member leaving out its range field matches any source byte
    apply_update(sw, st, update(ids["MyParser.special"], [[ternary]]))
    assert sw.inject(1, frame(0x88ab, 200)) == [(2, tag(frame(0x88ab, 200), 2))]
    apply_update(sw, st, update(ids["MyParser.tagged"], []))
    assert sw.inject(1, frame(0x1234, 15)) == [(2, frame(0x1234, 15))]


def test_bad_writes_are_refused_and_change_nothing(target) -> None:
    sw, st, ids = target
    exact = p4runtime_pb2.FieldMatch(field_id=1, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x08\x00"))
    apply_update(sw, st, update(ids["MyParser.tagged"], [[exact]]))
    with pytest.raises(P4RTError, match="can only be modified"):
        apply_update(sw, st, update(ids["MyParser.tagged"], [[exact]], p4runtime_pb2.Update.INSERT))
    with pytest.raises(P4RTError, match="value set id 7 is not in the P4Info"):
        apply_update(sw, st, update(7, [[exact]]))
    with pytest.raises(P4RTError, match="holds 4 members, not 5"):
        apply_update(sw, st, update(ids["MyParser.tagged"], [[exact]] * 5))
    with pytest.raises(P4RTError, match="is exact: give it a value"):
        apply_update(sw, st, update(ids["MyParser.tagged"], [[]]))
    wide = p4runtime_pb2.FieldMatch(field_id=1, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01\x00\x00"))
    with pytest.raises(P4RTError):
        apply_update(sw, st, update(ids["MyParser.tagged"], [[wide]]))
    assert sw.value_set_members("MyParser.tagged") == [(Exact(0x0800),)]
