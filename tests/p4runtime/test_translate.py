"""Request validation against a schema: widths, canonical bytes, don't-cares, priorities."""

from __future__ import annotations

import pytest
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.model import Action, ActionRef, Field, KeyField, ProgramModel, Table
from p4target.p4info import build_p4info
from p4target.p4runtime import bytestrings
from p4target.p4runtime.errors import INVALID_ARGUMENT, OUT_OF_RANGE, P4RTError
from p4target.p4runtime.schema import build_schema
from p4target.p4runtime.translate import decode_match, decode_priority, encode_match, table_action
from p4target.runtime.entries import Exact, Lpm, Optional, Range, Ternary

MODEL = ProgramModel(
    source="t.p4", arch="v1model",
    tables=(
        Table("c.lpm", (KeyField("dst", 32, "lpm"), KeyField("port", 9, "exact")),
              (ActionRef("c.fwd"), ActionRef("c.only_default", "default_only")), "c.only_default"),
        Table("c.acl", (KeyField("t", 16, "ternary"), KeyField("r", 12, "range"), KeyField("o", 8, "optional")),
              (ActionRef("c.fwd"),), "c.fwd", (0,)),
    ),
    actions=(Action("c.fwd", (Field("port", 9),)), Action("c.only_default", ())),
    externs=(),
)


@pytest.fixture(scope="module")
def schema():
    return build_schema(MODEL, build_p4info(MODEL))


def fm(fid: int, **kw) -> p4runtime_pb2.FieldMatch:
    m = p4runtime_pb2.FieldMatch(field_id=fid)
    for kind, val in kw.items():
        getattr(m, kind).CopyFrom(val)
    return m


def _code(fn) -> int:
    with pytest.raises(P4RTError) as ei:
        fn()
    return ei.value.code


def test_bytestrings_accept_any_length_that_fits_and_refuse_the_rest() -> None:
    # the spec's own examples (section 8.3): valid and invalid encodings
    assert bytestrings.decode(b"\x63", 8, "f") == 99
    assert bytestrings.decode(b"\x00\x63", 16, "f") == 99
    assert bytestrings.decode(b"\x00\x00\x63", 12, "f") == 99  # longer than needed: still fine
    assert bytestrings.decode(b"\x01\x00", 9, "f") == 256
    assert bytestrings.encode(0) == b"\x00" and bytestrings.encode(256) == b"\x01\x00"
    for bad, width in ((b"\x01\x63", 8), (b"", 8), (b"\x01\x00\x63", 16), (b"\x10\x63", 12),
                       (b"\x00\x40\x63", 12)):
        with pytest.raises(P4RTError, match="f:") as ei:
            bytestrings.decode(bad, width, "f")
        assert ei.value.code == OUT_OF_RANGE


def test_match_round_trip(schema) -> None:
    lpm = schema.table(schema.id_of("table", "c.lpm"))
    ms = [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x0a\x00\x00\x00", prefix_len=8)),
          fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01\x01"))]
    match = decode_match(lpm, ms)
    assert match == {"dst": Lpm(0x0A000000, 8), "port": Exact(257)}
    assert [m.SerializeToString() for m in encode_match(lpm, match)] == [
        fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x0a\x00\x00\x00", prefix_len=8)).SerializeToString(),
        fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01\x01")).SerializeToString()]
    acl = schema.table(schema.id_of("table", "c.acl"))
    got = decode_match(acl, [fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x08\x00", mask=b"\xff\x00")),
                             fm(2, range=p4runtime_pb2.FieldMatch.Range(low=b"\x01", high=b"\x02")),
                             fm(3, optional=p4runtime_pb2.FieldMatch.Optional(value=b"\x07"))])
    assert got == {"t": Ternary(0x800, 0xFF00), "r": Range(1, 2), "o": Optional(7)}
    assert decode_match(acl, []) == {}  # everything wildcarded


@pytest.mark.parametrize("bad", [
    [fm(9, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01"))],                                  # unknown field
    [fm(2, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x01", mask=b"\x01"))],                 # wrong kind
    [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x0a\x00\x00\x01", prefix_len=8))],            # bits past prefix
    [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x00", prefix_len=0))],                        # don't care present
    [fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x00", prefix_len=33))],                       # too long
    [fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01")),
     fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01"))],                                  # twice
])
def test_bad_lpm_table_matches(schema, bad) -> None:
    t = schema.table(schema.id_of("table", "c.lpm"))
    full = list(bad)
    if not any(m.field_id == 2 for m in bad):
        full.append(fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01")))
    assert _code(lambda: decode_match(t, full)) == INVALID_ARGUMENT


def test_values_too_wide_are_out_of_range(schema) -> None:
    t = schema.table(schema.id_of("table", "c.lpm"))
    too_wide = [fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x02\x00")),  # 512 > 9 bits
                fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x0a\x00\x00\x00", prefix_len=8))]
    assert _code(lambda: decode_match(t, too_wide)) == OUT_OF_RANGE
    padded = [fm(2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x00\x00\x00\x01")),
              fm(1, lpm=p4runtime_pb2.FieldMatch.LPM(value=b"\x00\x0a\x00\x00\x00", prefix_len=8))]
    assert decode_match(t, padded) == {"port": Exact(1), "dst": Lpm(0x0A000000, 8)}


def test_missing_exact_and_ternary_rules(schema) -> None:
    lpm = schema.table(schema.id_of("table", "c.lpm"))
    assert _code(lambda: decode_match(lpm, [])) == INVALID_ARGUMENT
    acl = schema.table(schema.id_of("table", "c.acl"))
    for bad in (fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x00", mask=b"\x00")),
                fm(1, ternary=p4runtime_pb2.FieldMatch.Ternary(value=b"\x01", mask=b"\x10")),
                fm(2, range=p4runtime_pb2.FieldMatch.Range(low=b"\x05", high=b"\x01")),
                fm(2, range=p4runtime_pb2.FieldMatch.Range(low=b"\x00", high=b"\x0f\xff"))):
        assert _code(lambda bad=bad: decode_match(acl, [bad])) == INVALID_ARGUMENT


def test_priorities(schema) -> None:
    lpm = schema.table(schema.id_of("table", "c.lpm"))
    acl = schema.table(schema.id_of("table", "c.acl"))
    assert decode_priority(lpm, 0) is None and decode_priority(acl, 5) == 5
    assert _code(lambda: decode_priority(lpm, 3)) == INVALID_ARGUMENT
    assert _code(lambda: decode_priority(acl, 0)) == INVALID_ARGUMENT


def test_action_scope_and_params(schema) -> None:
    t = schema.table(schema.id_of("table", "c.lpm"))
    fwd = schema.id_of("action", "c.fwd")
    only_default = schema.id_of("action", "c.only_default")
    a = p4runtime_pb2.Action(action_id=fwd)
    a.params.add(param_id=1, value=b"\x02")
    assert table_action(schema, t, a, default=False).params == {"port": 2}
    # a valid action out of its scope is PERMISSION_DENIED (spec 9.1.3)
    assert _code(lambda: table_action(schema, t, p4runtime_pb2.Action(action_id=only_default), False)) == 7
    assert table_action(schema, t, p4runtime_pb2.Action(action_id=only_default), True).name == "c.only_default"
    assert _code(lambda: table_action(schema, t, p4runtime_pb2.Action(action_id=fwd), False)) == INVALID_ARGUMENT
    extra = p4runtime_pb2.Action(action_id=fwd)
    extra.params.add(param_id=1, value=b"\x02")
    extra.params.add(param_id=2, value=b"\x02")
    assert _code(lambda: table_action(schema, t, extra, False)) == INVALID_ARGUMENT
    assert _code(lambda: table_action(schema, t, p4runtime_pb2.Action(action_id=12345), False)) == INVALID_ARGUMENT


def test_schema_refuses_a_p4info_of_another_program(schema) -> None:
    other = build_p4info(MODEL)
    other.tables[0].match_fields[0].bitwidth = 31
    with pytest.raises(P4RTError, match="match fields of table"):
        build_schema(MODEL, other)
    other = build_p4info(MODEL)
    other.tables[0].preamble.name = "c.renamed"
    with pytest.raises(P4RTError, match="tables"):
        build_schema(MODEL, other)
