"""Finer spec rules: read filters and per-request read errors, direct resources on
MODIFY, const entries, action scopes, max_size, one-shot/member mixing, indexes."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.conftest import tframe
from tests.p4runtime.p4rt_client import enc, entity, errors_of, ins, update

DST = 0x0A0000000001


def test_read_batch_reports_each_request(client, names) -> None:
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)))
    good = entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t")))
    bad = entity(table_entry=p4runtime_pb2.TableEntry(table_id=0x02ABCDEF))
    req = p4runtime_pb2.ReadRequest(device_id=1, entities=[good, bad, p4runtime_pb2.Entity()])
    got = []
    with pytest.raises(grpc.RpcError) as ei:
        for resp in client.stub.Read(req, timeout=10):
            got.extend(resp.entities)
    assert ei.value.code() == grpc.StatusCode.UNKNOWN
    assert [e.canonical_code for e in errors_of(ei.value)] == [
        code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT]
    assert [e.table_entry.match[0].exact.value for e in got] == [enc(DST)]  # the valid request's entities


def test_read_filters_priority_and_action(client, names) -> None:
    client.write(
        ins(names.entry("acl_t", {"hdr.t.k16": ("ternary", 1, 0xFF)}, "set_out", priority=3, v=1)),
        ins(names.entry("acl_t", {"hdr.t.k16": ("ternary", 2, 0xFF)}, "set_out", priority=4, v=2)),
        ins(names.entry("acl_t", {"hdr.t.k16": ("ternary", 3, 0xFF)}, "drop", priority=4)),
    )
    tid = names.table_id("acl_t")
    by_prio = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=tid, priority=4)))
    assert sorted(e.table_entry.match[0].ternary.value for e in by_prio) == [b"\x02", b"\x03"]
    f = p4runtime_pb2.TableEntry(table_id=tid)
    f.action.action.action_id = names.action_id("drop")
    assert [e.table_entry.match[0].ternary.value for e in client.read(entity(table_entry=f))] == [b"\x03"]


def test_direct_resources_on_modify_and_in_reads(client, names, rig) -> None:
    e = names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "lpm_hit", v=1)
    e.meter_config.cir, e.meter_config.cburst, e.meter_config.pir, e.meter_config.pburst = 10, 10, 20, 20
    client.write(ins(e))
    plain = p4runtime_pb2.TableEntry(table_id=names.table_id("lpm_t"))
    assert not client.read(entity(table_entry=plain))[0].table_entry.HasField("meter_config")  # only if asked
    asked = p4runtime_pb2.TableEntry(table_id=names.table_id("lpm_t"))
    asked.meter_config.SetInParent()
    assert client.read(entity(table_entry=asked))[0].table_entry.meter_config == e.meter_config
    # MODIFY with an action and no meter_config resets the meter (spec 9.1.9)
    client.write(ins(names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "lpm_hit", v=2), "MODIFY"))
    assert not client.read(entity(table_entry=asked))[0].table_entry.HasField("meter_config")
    # MODIFY without an action changes only the direct counter given
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)))
    only_counter = names.entry("exact_t", {"hdr.eth.dst_addr": DST})
    only_counter.counter_data.packet_count = 9
    client.write(ins(only_counter, "MODIFY"))
    te = p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t"))
    te.counter_data.SetInParent()
    got = client.read(entity(table_entry=te))[0].table_entry
    assert got.counter_data.packet_count == 9 and got.action.action.params[0].value == b"\x02"
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [2]
    # a no-op MODIFY of a missing entry, a DirectCounterEntry read of a missing one: NOT_FOUND
    assert client.write_codes(ins(names.entry("exact_t", {"hdr.eth.dst_addr": 77}), "MODIFY")) == [
        code_pb2.NOT_FOUND]
    dce = p4runtime_pb2.DirectCounterEntry()
    dce.table_entry.CopyFrom(names.entry("exact_t", {"hdr.eth.dst_addr": 77}))
    with pytest.raises(grpc.RpcError) as ei:
        client.read(entity(direct_counter_entry=dce))
    assert [x.canonical_code for x in errors_of(ei.value)] == [code_pb2.NOT_FOUND]
    # per-colour meter counters are not implemented; eburst is for single-rate meters
    colour = names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0B000000, 8)}, "lpm_hit", v=1)
    colour.meter_counter_data.SetInParent()
    eburst = names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0C000000, 8)}, "lpm_hit", v=1)
    eburst.meter_config.cir, eburst.meter_config.pir, eburst.meter_config.eburst = 1, 1, 5
    assert client.write_codes(ins(colour), ins(eburst)) == [code_pb2.UNIMPLEMENTED, code_pb2.INVALID_ARGUMENT]


def test_const_entries_scopes_and_indirect_defaults(client, names) -> None:
    const_entry = names.entry("const_t", {"hdr.t.k8": 0x77})
    with_action = names.entry("const_t", {"hdr.t.k8": 0x77}, "set_out", v=1)
    assert client.write_codes(ins(const_entry, "MODIFY"), ins(with_action, "MODIFY"), ins(const_entry, "DELETE")) == [
        code_pb2.OK, code_pb2.PERMISSION_DENIED, code_pb2.PERMISSION_DENIED]
    # NoAction is @defaultonly in lpm_t: in an entry it is PERMISSION_DENIED (spec 9.1.3)
    only_default = names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "NoAction")
    d = p4runtime_pb2.TableEntry(table_id=names.table_id("prof_t"), is_default_action=True)
    d.action.action.CopyFrom(names.act("NoAction"))
    idle_default = p4runtime_pb2.TableEntry(table_id=names.table_id("lpm_t"), is_default_action=True,
                                            idle_timeout_ns=5)
    assert client.write_codes(ins(only_default), ins(d, "MODIFY"), ins(idle_default, "MODIFY")) == [
        code_pb2.PERMISSION_DENIED, code_pb2.PERMISSION_DENIED, code_pb2.INVALID_ARGUMENT]


def _sel(names, kind: str, **kw):
    pid = names.id_of("action_profiles", "as_sel")
    if kind == "member":
        m = p4runtime_pb2.ActionProfileMember(action_profile_id=pid, member_id=kw["mid"])
        m.action.CopyFrom(names.act("fwd_out", port=kw.get("port", 1), v=1))
        return update("m", kw.get("op", "INSERT"), action_profile_member=m)
    g = p4runtime_pb2.ActionProfileGroup(action_profile_id=pid, group_id=kw["gid"], max_size=kw.get("max_size", 0))
    for mid in kw.get("members", ()):
        g.members.add(member_id=mid, weight=1)
    return update("g", kw.get("op", "INSERT"), action_profile_group=g)


def test_group_max_size_and_ids(client, names) -> None:
    client.write(_sel(names, "member", mid=1), _sel(names, "member", mid=2))
    codes = client.write_codes(
        _sel(names, "group", gid=5, members=[1, 2], max_size=4),
        _sel(names, "group", gid=5, members=[1], max_size=3, op="MODIFY"),   # max_size changed
        _sel(names, "group", gid=6, members=[1, 2], max_size=1),             # weights exceed max_size
        _sel(names, "group", gid=0, members=[1]),                            # id 0
        _sel(names, "member", mid=0),                                        # id 0
        _sel(names, "group", gid=5, members=[1], max_size=4, op="MODIFY"),
    )
    assert codes == [code_pb2.OK, code_pb2.INVALID_ARGUMENT, code_pb2.RESOURCE_EXHAUSTED,
                     code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    # members/groups in use: a one-shot on the same selector is refused
    e = names.entry("sel_t", {"hdr.t.k16": 1})
    apa = e.action.action_profile_action_set.action_profile_actions.add(weight=1)
    apa.action.CopyFrom(names.act("fwd_out", port=1, v=1))
    assert client.write_codes(ins(e)) == [code_pb2.INVALID_ARGUMENT]


def test_one_shots_exclude_members_and_groups(client, names) -> None:
    e = names.entry("sel_t", {"hdr.t.k16": 1})
    apa = e.action.action_profile_action_set.action_profile_actions.add(weight=1)
    apa.action.CopyFrom(names.act("fwd_out", port=1, v=1))
    client.write(ins(e))
    by_group = names.entry("sel_t", {"hdr.t.k16": 2})
    by_group.action.action_profile_group_id = 3
    assert client.write_codes(_sel(names, "member", mid=1), _sel(names, "group", gid=3), ins(by_group)) == [
        code_pb2.INVALID_ARGUMENT] * 3


def test_indexes_and_counter_modify_without_data(client, names, rig) -> None:
    cid = names.id_of("counters", "port_pkts")
    rig.send(3, tframe())
    neg = p4runtime_pb2.CounterEntry(counter_id=cid)
    neg.index.index = -1
    neg.data.packet_count = 1
    keep = p4runtime_pb2.CounterEntry(counter_id=cid)
    keep.index.index = 3
    assert client.write_codes(update("c", "MODIFY", counter_entry=neg), update("c", "MODIFY", counter_entry=keep)) == [
        code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    assert client.read(entity(counter_entry=keep))[0].counter_entry.data.packet_count == 1  # unchanged
    reg = p4runtime_pb2.RegisterEntry(register_id=names.id_of("registers", "last_port"))
    reg.index.index = -2
    reg.data.bitstring = b"\x01"
    assert client.write_codes(update("r", "MODIFY", register_entry=reg)) == [code_pb2.INVALID_ARGUMENT]
