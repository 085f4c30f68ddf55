"""The P4Info lists the actions p4c lists and every table's initial_default_action.

Expectations come from p4c's P4Info generator (control-plane/p4RuntimeSerializer.cpp,
run on the output of p4c's front end: CreateBuiltins, RemoveAllUnusedDeclarations,
InlineActions, LocalizeAllActions; the rule is written out in docs/p4runtime.md) and
from the P4Runtime 1.4 p4info.proto (``Table.initial_default_action``, a
``TableActionCall`` whose arguments carry the parameter id and the value on the
parameter's full width in bytes, as p4c's published default-action-arg-bmv2 P4Info
shows: 10 on bit<32> is ``"\\000\\000\\000\\n"``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.compiler import compile_file
from p4target.p4info import build_p4info, p4info_text, parse_p4info_text

P4 = Path(__file__).parent / "p4"


@pytest.fixture(scope="module")
def info() -> p4info_pb2.P4Info:
    return build_p4info(compile_file(P4 / "p4info_actions.p4").model)


def _action_id(info: p4info_pb2.P4Info, name: str) -> int:
    return next(a.preamble.id for a in info.actions if a.preamble.name == name)


def _table(info: p4info_pb2.P4Info, name: str) -> p4info_pb2.Table:
    return next(t for t in info.tables if t.preamble.name == name)


def test_actions_are_those_p4c_keeps_in_its_order(info: p4info_pb2.P4Info) -> None:
    # Per control in V1Switch order: top-level actions the control names outside action
    # bodies (tables first, then the apply block), then its own actions that some kept
    # code names, in declaration order; each name once; no @hidden.
    assert [a.preamble.name for a in info.actions] == [
        "global_in_table", "NoAction", "global_direct",
        "AIngress.fwd", "AIngress.add", "AIngress.helper", "AIngress.wrap", "AIngress.count_it",
        "AEgress.egress_direct",
    ]
    names = {a.preamble.name for a in info.actions}
    # the ones p4c leaves out, and why
    assert "global_inner" not in names          # named only inside an action body (inlined)
    assert "global_unused" not in names         # never named
    assert "AIngress.unused_local" not in names
    assert "AIngress.only_from_unused" not in names  # named only by an unused action
    assert "AIngress.hidden_one" not in names   # @hidden
    count_it = next(a for a in info.actions if a.preamble.name == "AIngress.count_it")
    assert count_it.preamble.id >> 24 == 0x01 and count_it.preamble.alias == "count_it"


def test_initial_default_action_of_every_table(info: p4info_pb2.P4Info) -> None:
    route = _table(info, "AIngress.route")
    assert route.const_default_action_id == 0
    assert route.initial_default_action.action_id == _action_id(info, "AIngress.fwd")
    assert [(a.param_id, a.value) for a in route.initial_default_action.arguments] == [(1, b"\x00\x05")]

    # no default_action: p4c's implicit NoAction (not const), listed @defaultonly
    nd = _table(info, "AIngress.no_default")
    assert nd.HasField("initial_default_action")
    assert nd.initial_default_action.action_id == _action_id(info, "NoAction")
    assert list(nd.initial_default_action.arguments) == []
    assert nd.const_default_action_id == 0
    assert nd.action_refs[-1].scope == p4info_pb2.ActionRef.DEFAULT_ONLY

    cd = _table(info, "AIngress.const_default")
    add = _action_id(info, "AIngress.add")
    assert cd.const_default_action_id == add
    assert cd.initial_default_action.action_id == add
    assert [(a.param_id, a.value) for a in cd.initial_default_action.arguments] == [
        (1, b"\x00\x00\x00\x0a"), (2, b"\x00\x00\x00\x00")]


def test_matches_p4c_published_p4info_of_issue4969() -> None:
    # p4c's testdata/p4_16_samples_outputs/issue-4969-bmv2.p4.p4info.txtpb
    info = build_p4info(compile_file(P4 / "p4c_issue4969.p4").model)
    t = _table(info, "ingressImpl.t1")
    assert t.preamble.id == 49173205 and t.size == 512
    assert [r.id for r in t.action_refs] == [21257015, 25646030, 21008649]
    assert t.initial_default_action.action_id == 21257015
    assert not t.initial_default_action.arguments and t.const_default_action_id == 0
    assert [(a.preamble.name, a.preamble.id) for a in info.actions] == [
        ("NoAction", 21257015), ("foo1", 25646030), ("bar", 21008649)]


def test_text_format_has_the_initial_default_action_and_round_trips() -> None:
    out = subprocess.run([sys.executable, "-m", "p4target", "compile", str(P4 / "p4info_actions.p4"),
                          "--p4info", "-"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("initial_default_action {") == 3
    assert 'name: "AIngress.count_it"' in out.stdout
    again = parse_p4info_text(out.stdout)
    assert _table(again, "AIngress.route").initial_default_action.arguments[0].value == b"\x00\x05"


def test_p4runtime_server_serves_this_p4info_and_its_defaults() -> None:
    """Push the program with its P4Info over real gRPC; the default entry the server
    reads back is the P4Info's initial_default_action (P4Runtime 1.4, 9.1)."""
    from p4target.device import Device
    from p4target.device_config import device_config_from_file
    from p4target.p4runtime.server import P4RuntimeServer
    from tests.p4runtime.p4rt_client import RawClient, entity

    data = device_config_from_file(P4 / "p4info_actions.p4")
    info = build_p4info(compile_file(P4 / "p4info_actions.p4").model)
    server = P4RuntimeServer(Device(device_id=1), "127.0.0.1:0")
    server.start()
    client = RawClient(server.bound_port, device_id=1)
    try:
        client.arbitrate(1)
        client.set_pipeline(info, data)
        got = client.get_pipeline("P4INFO_AND_COOKIE").p4info
        assert {a.preamble.name for a in got.actions} >= {"AIngress.count_it", "AEgress.egress_direct"}
        for tname in ("AIngress.route", "AIngress.no_default", "AIngress.const_default"):
            t = _table(info, tname)
            read = client.read(entity(table_entry=p4runtime_pb2.TableEntry(
                table_id=t.preamble.id, is_default_action=True)))
            assert len(read) == 1
            act = read[0].table_entry.action.action
            want = t.initial_default_action
            assert act.action_id == want.action_id
            assert [(p.param_id, int.from_bytes(p.value, "big")) for p in act.params] == [
                (a.param_id, int.from_bytes(a.value, "big")) for a in want.arguments]
    finally:
        client.close()
        server.stop()


def test_text_is_stable(info: p4info_pb2.P4Info) -> None:
    # the text writer prints the new field between const_default_action_id and size
    text = p4info_text(compile_file(P4 / "p4info_actions.p4").model)
    block = text[text.index('name: "AIngress.const_default"'):]
    assert block.index("const_default_action_id") < block.index("initial_default_action") < block.index("size")


def test_action_order_matches_p4c_published_p4info_of_basic_routing() -> None:
    # p4c's testdata/p4_16_samples_outputs/basic_routing-bmv2.p4.p4info.txtpb
    info = build_p4info(compile_file(P4 / "p4c_basic_routing.p4").model)
    assert [(a.preamble.name, a.preamble.id, a.preamble.alias) for a in info.actions] == [
        ("NoAction", 21257015, "NoAction"),
        ("ingress.set_vrf", 33505590, "set_vrf"),
        ("ingress.on_miss", 22594144, "ingress.on_miss"),
        ("ingress.fib_hit_nexthop", 26104220, "fib_hit_nexthop"),
        ("ingress.set_egress_details", 19738113, "set_egress_details"),
        ("ingress.set_bd", 27500220, "set_bd"),
        ("egress.on_miss", 28864280, "egress.on_miss"),
        ("egress.rewrite_src_dst_mac", 28966416, "rewrite_src_dst_mac"),
    ]
    assert [(t.preamble.name, t.preamble.id) for t in info.tables] == [
        ("ingress.bd", 48392551), ("ingress.ipv4_fib", 41084491), ("ingress.ipv4_fib_lpm", 42875950),
        ("ingress.nexthop", 43581057), ("ingress.port_mapping", 39645634), ("egress.rewrite_mac", 40309161)]
    # each table: its actions, then the implicit NoAction as @defaultonly
    fib = _table(info, "ingress.ipv4_fib")
    assert [r.id for r in fib.action_refs] == [22594144, 26104220, 21257015]
    assert list(fib.action_refs[-1].annotations) == ["@defaultonly"]


def test_named_v1switch_arguments_keep_the_parameter_order(tmp_path: Path) -> None:
    # p4c evaluates V1Switch's blocks by parameter (p, vr, ig, eg, ck, dep), whatever
    # order named arguments are written in; basic_routing-bmv2.p4 writes ig before vr
    # and eg, and p4c's P4Info still lists ingress's actions before egress's.
    from p4target.frontend.control_plane import p4info_action_names
    from p4target.frontend.lexer import tokenize
    from p4target.frontend.parser import parse_tokens
    from p4target.frontend.preprocessor import preprocess

    src = (P4 / "p4c_basic_routing.p4").read_text().replace(
        "V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(), DeparserImpl()) main;",
        "V1Switch(p = ParserImpl(), eg = egress(), vr = verifyChecksum(), ig = ingress(),\n"
        "         ck = computeChecksum(), dep = DeparserImpl()) main;")
    path = tmp_path / "named.p4"
    path.write_text(src)
    program = parse_tokens(tokenize(preprocess(path)))
    names = p4info_action_names(program, declared={"NoAction", "ingress.set_vrf", "egress.on_miss"}, listed=[])
    assert names == ["NoAction", "ingress.set_vrf", "egress.on_miss"]
