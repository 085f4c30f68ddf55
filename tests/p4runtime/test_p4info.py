"""P4Info from hand-built ProgramModels: p4c's ids, aliases, numbering and annotations."""

from __future__ import annotations

import pytest
from finsy.proto.p4.config.v1 import p4info_pb2
from google.protobuf import text_format

from p4target.errors import P4Error
from p4target.model import (
    Action,
    ActionRef,
    ConstEntry,
    ControllerHeader,
    Digest,
    Extern,
    Field,
    KeyField,
    KeyMatch,
    ProgramModel,
    Table,
)
from p4target.p4info import build_p4info, jenkins_one_at_a_time, p4info_text, parse_p4info_text


def tutorial_model() -> ProgramModel:
    """The P4 tutorials' basic.p4 (MyIngress.ipv4_lpm), whose p4c P4Info is widely published."""
    return ProgramModel(
        source="basic.p4",
        arch="v1model",
        tables=(
            Table(
                name="MyIngress.ipv4_lpm",
                keys=(KeyField("hdr.ipv4.dstAddr", 32, "lpm"),),
                actions=(ActionRef("MyIngress.ipv4_forward"), ActionRef("MyIngress.drop"), ActionRef("NoAction")),
                default_action="MyIngress.drop",
            ),
        ),
        actions=(
            Action("NoAction", (), {"noWarn": '"unused"'}),
            Action("MyIngress.drop", ()),
            Action("MyIngress.ipv4_forward", (Field("dstAddr", 48), Field("port", 9))),
        ),
        externs=(),
    )


def test_ids_match_p4c_published_values() -> None:
    # Values from p4c's basic.p4 P4Info (P4 tutorials): table 37375156, actions below.
    info = build_p4info(tutorial_model())
    assert info.pkg_info.arch == "v1model"
    t = info.tables[0]
    assert t.preamble.id == 37375156
    assert t.preamble.alias == "ipv4_lpm"
    assert t.size == 1024
    ids = {a.preamble.name: a.preamble.id for a in info.actions}
    assert ids == {"NoAction": 21257015, "MyIngress.drop": 25652968, "MyIngress.ipv4_forward": 28792405}
    assert [r.id for r in t.action_refs] == [28792405, 25652968, 21257015]
    assert t.match_fields[0].id == 1 and t.match_fields[0].match_type == p4info_pb2.MatchField.LPM
    fwd = next(a for a in info.actions if a.preamble.name == "MyIngress.ipv4_forward")
    assert [(p.id, p.name, p.bitwidth) for p in fwd.params] == [(1, "dstAddr", 48), (2, "port", 9)]
    noaction = next(a for a in info.actions if a.preamble.name == "NoAction")
    assert list(noaction.preamble.annotations) == ['@noWarn("unused")']


def test_basic_tunnel_ids_match_p4c() -> None:
    # p4c's P4Info of the tutorials' basic_tunnel.p4: table 35862311, action 24181246.
    model = ProgramModel(
        source="basic_tunnel.p4", arch="v1model",
        tables=(Table("MyIngress.myTunnel_exact", (KeyField("hdr.myTunnel.dst_id", 16, "exact"),),
                      (ActionRef("MyIngress.myTunnel_ingress"),), "MyIngress.myTunnel_ingress", (0,)),),
        actions=(Action("MyIngress.myTunnel_ingress", (Field("dst_id", 16),)),), externs=(),
    )
    info = build_p4info(model)
    assert info.tables[0].preamble.id == 35862311 and info.actions[0].preamble.id == 24181246


def test_jenkins_hash_known_vector() -> None:
    # One-at-a-time hash of "a" (Bob Jenkins' reference): 0xca2e9442.
    assert jenkins_one_at_a_time(b"a") == 0xCA2E9442


def _colliding_names() -> tuple[str, str]:
    seen: dict[int, str] = {}
    for i in range(200000):
        name = f"c.t{i}"
        low = jenkins_one_at_a_time(name.encode()) & 0xFFFFFF
        if low in seen:
            return seen[low], name
        seen[low] = name
    raise AssertionError("no collision found")


def test_hash_collisions_probe_linearly_in_sorted_order() -> None:
    a, b = _colliding_names()
    first, second = sorted([a, b], key=str.encode)
    model = ProgramModel(
        source="x.p4", arch="v1model",
        tables=tuple(Table(n, (KeyField("k", 8, "exact"),), (ActionRef("NoAction"),), "NoAction") for n in (b, a)),
        actions=(Action("NoAction", ()),), externs=(),
    )
    ids = {t.preamble.name: t.preamble.id for t in build_p4info(model).tables}
    base = (0x02 << 24) | (jenkins_one_at_a_time(first.encode()) & 0xFFFFFF)
    assert ids[first] == base
    assert ids[second] == (0x02 << 24) | ((jenkins_one_at_a_time(second.encode()) + 1) & 0xFFFFFF)


def test_explicit_ids_with_and_without_prefix_and_errors() -> None:
    def model(aid: str, tid: str) -> ProgramModel:
        return ProgramModel(
            source="x.p4", arch="v1model",
            tables=(Table("c.t", (KeyField("k", 8, "exact"),), (ActionRef("c.a"),), "c.a", annotations={"id": tid}),),
            actions=(Action("c.a", (), {"id": aid}),), externs=(),
        )

    info = build_p4info(model("5", "0x02000007"))
    assert info.actions[0].preamble.id == 0x01000005
    assert info.tables[0].preamble.id == 0x02000007
    assert "@id" not in "".join(info.tables[0].preamble.annotations)
    with pytest.raises(P4Error, match="wrong 8-bit prefix"):
        build_p4info(model("0x02000005", "7"))
    dup = ProgramModel(
        source="x.p4", arch="v1model", tables=(),
        actions=(Action("a1", (), {"id": "3"}), Action("a2", (), {"id": "3"})), externs=(),
    )
    with pytest.raises(P4Error, match="more than one"):
        build_p4info(dup)


def test_aliases_are_shortest_unique_suffixes() -> None:
    model = ProgramModel(
        source="x.p4", arch="v1model",
        tables=tuple(
            Table(n, (KeyField("k", 8, "exact"),), (ActionRef("NoAction"),), "NoAction")
            for n in ("Ingress.fwd", "Egress.fwd", "Ingress.acl")
        ),
        actions=(Action("NoAction", ()),), externs=(),
    )
    aliases = {t.preamble.name: t.preamble.alias for t in build_p4info(model).tables}
    assert aliases == {"Ingress.fwd": "Ingress.fwd", "Egress.fwd": "Egress.fwd", "Ingress.acl": "acl"}


def full_model() -> ProgramModel:
    return ProgramModel(
        source="full.p4",
        arch="v1model",
        tables=(
            Table(
                "Ingress.acl",
                keys=(KeyField("hdr.eth.type", 16, "ternary", {"brief": '"ethertype"'}),
                      KeyField("hdr.ipv6.src", 128, "range"), KeyField("meta.x", 8, "optional")),
                actions=(ActionRef("Ingress.set", "table_only"), ActionRef("NoAction", "default_only", {"defaultonly": ""})),
                default_action="NoAction", default_is_const=True, size=64,
                direct_counter="Ingress.acl_hits", direct_meter="Ingress.acl_meter",
                const_entries=(ConstEntry((KeyMatch("ternary", 1, 1), KeyMatch("dontcare"), KeyMatch("dontcare")),
                                          "NoAction", (), 1),),
                annotations={"brief": '"ACL"', "description": '"drops things"', "name": '"Ingress.acl"'},
            ),
            Table(
                "Ingress.spray",
                keys=(KeyField("hdr.ipv6.dst", 128, "exact"), KeyField("meta.hash", 16, "selector")),
                actions=(ActionRef("Ingress.set"),), default_action="Ingress.set", default_args=(0,),
                implementation="Ingress.sel", supports_idle_timeout=True,
            ),
        ),
        actions=(Action("NoAction", ()), Action("Ingress.set", (Field("port", 9),))),
        externs=(
            Extern("direct_counter", "Ingress.acl_hits", unit="packets_and_bytes", tables=("Ingress.acl",)),
            Extern("direct_meter", "Ingress.acl_meter", unit="bytes", tables=("Ingress.acl",)),
            Extern("counter", "Ingress.drops", size=16, unit="packets"),
            Extern("meter", "Ingress.police", size=4, unit="packets"),
            Extern("register", "Ingress.seen", size=8, bitwidth=48),
            Extern("action_selector", "Ingress.sel", size=128, algorithm="crc16", tables=("Ingress.spray",),
                   annotations={"max_group_size": "16"}),
        ),
        controller_headers=(
            ControllerHeader("packet_in", "packet_in_t", (Field("ingress_port", 9), Field("_pad", 7))),
            ControllerHeader("packet_out", "packet_out_t", (Field("egress_port", 9), Field("_pad", 7))),
        ),
        digests=(Digest("learn_t", (Field("mac", 48), Field("port", 9))),),
    )


def test_every_object_kind_is_described() -> None:
    info = build_p4info(full_model())
    acl = next(t for t in info.tables if t.preamble.name == "Ingress.acl")
    assert acl.preamble.doc.brief == "ACL" and acl.preamble.doc.description == "drops things"
    assert list(acl.preamble.annotations) == []
    assert [(m.id, m.match_type) for m in acl.match_fields] == [
        (1, p4info_pb2.MatchField.TERNARY), (2, p4info_pb2.MatchField.RANGE), (3, p4info_pb2.MatchField.OPTIONAL)]
    assert acl.match_fields[0].doc.brief == "ethertype"
    assert acl.is_const_table and acl.size == 64
    noaction_id = next(a.preamble.id for a in info.actions if a.preamble.name == "NoAction")
    assert acl.const_default_action_id == noaction_id
    assert acl.action_refs[1].scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    assert list(acl.action_refs[1].annotations) == ["@defaultonly"]
    assert list(acl.action_refs[0].annotations) == ["@tableonly"]  # added from the scope, as p4c prints it
    assert sorted(i >> 24 for i in acl.direct_resource_ids) == [0x13, 0x15]
    assert info.direct_counters[0].direct_table_id == acl.preamble.id
    assert info.direct_meters[0].spec.unit == p4info_pb2.MeterSpec.BYTES
    spray = next(t for t in info.tables if t.preamble.name == "Ingress.spray")
    assert len(spray.match_fields) == 1  # the selector key is not a match field
    assert spray.idle_timeout_behavior == p4info_pb2.Table.NOTIFY_CONTROL
    prof = info.action_profiles[0]
    assert prof.with_selector and prof.size == 128 and prof.max_group_size == 16
    assert list(prof.table_ids) == [spray.preamble.id] and spray.implementation_id == prof.preamble.id
    assert prof.preamble.id >> 24 == 0x11
    assert info.counters[0].size == 16 and info.counters[0].spec.unit == p4info_pb2.CounterSpec.PACKETS
    assert info.meters[0].preamble.id >> 24 == 0x14
    assert info.registers[0].type_spec.bitstring.bit.bitwidth == 48 and info.registers[0].size == 8
    pin = next(c for c in info.controller_packet_metadata if c.preamble.name == "packet_in")
    assert pin.preamble.id >> 24 == 0x04
    assert list(pin.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [(1, "ingress_port", 9), (2, "_pad", 7)]
    d = info.digests[0]
    assert d.preamble.id >> 24 == 0x17 and d.type_spec.struct.name == "learn_t"
    assert [m.name for m in info.type_info.structs["learn_t"].members] == ["mac", "port"]


def test_text_format_round_trips() -> None:
    model = full_model()
    text = p4info_text(model)
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto")
    assert parse_p4info_text(text) == build_p4info(model)
    again = p4info_pb2.P4Info()
    text_format.Parse(text, again)
    assert again == build_p4info(model)
    with pytest.raises(P4Error, match="does not parse"):
        parse_p4info_text("tables { nonsense: 1 }")


def test_unknown_action_reference_is_a_clear_error() -> None:
    model = ProgramModel(
        source="x.p4", arch="v1model",
        tables=(Table("t", (KeyField("k", 8, "exact"),), (ActionRef("missing"),), "missing"),),
        actions=(), externs=(),
    )
    with pytest.raises(P4Error, match="table 't' lists action 'missing'"):
        build_p4info(model)


def test_annotation_bodies_print_as_p4c_does() -> None:
    from p4target.p4info import format_annotation

    assert format_annotation("noWarn", "unused") == '@noWarn("unused")'  # string body arrives unquoted
    assert format_annotation("noWarn", '"unused"') == '@noWarn("unused")'
    assert format_annotation("max_group_size", "16") == "@max_group_size(16)"
    assert format_annotation("format", "IPV4_ADDRESS") == "@format(IPV4_ADDRESS)"
    assert format_annotation("p4runtime_translation", '"p4.org/psa/v1/PortId_t", 32') == \
        '@p4runtime_translation("p4.org/psa/v1/PortId_t", 32)'
    assert format_annotation("hidden", "") == "@hidden"


def test_compiled_program_p4info_details() -> None:
    """rt_all.p4 through the real compiler: annotations, docs, scopes as p4c writes them."""
    from p4target.compiler import compile_file
    from tests.p4runtime.conftest import RT_ALL

    info = build_p4info(compile_file(RT_ALL).model)
    actions = {a.preamble.name: a for a in info.actions}
    assert list(actions["NoAction"].preamble.annotations) == ['@noWarn("unused")']
    assert actions["RtIngress.fwd"].preamble.doc.brief == "forward to a port"
    assert not actions["RtIngress.fwd"].preamble.annotations
    lpm = next(t for t in info.tables if t.preamble.name == "RtIngress.lpm_t")
    noaction = next(r for r in lpm.action_refs if r.id == actions["NoAction"].preamble.id)
    assert noaction.scope == p4info_pb2.ActionRef.DEFAULT_ONLY and list(noaction.annotations) == ["@defaultonly"]
    const = next(t for t in info.tables if t.preamble.name == "RtIngress.const_t")
    assert const.is_const_table and const.has_initial_entries and const.const_default_action_id
    assert {c.preamble.name for c in info.controller_packet_metadata} == {"packet_in", "packet_out"}
    assert [d.preamble.name for d in info.digests] == ["learn_t"]
