"""SetForwardingPipelineConfig actions: verify, save+commit, reconcile, bad configs."""

from __future__ import annotations

import json

import grpc
import pytest
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.device_config import device_config_from_file, load_device_config
from p4target.p4info import build_p4info
from tests.p4runtime.conftest import RT_V2, tframe, t_out
from tests.p4runtime.p4rt_client import Names, RawClient, entity, ins, update

DST = 0x0A0000000001


def _code(fn) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as ei:
        fn()
    return ei.value.code(), ei.value.details()


def _fill(client, names: Names) -> None:
    m = p4runtime_pb2.ActionProfileMember(action_profile_id=names.id_of("action_profiles", "ap"), member_id=1)
    m.action.CopyFrom(names.act("fwd_out", port=4, v=9))
    pe = names.entry("prof_t", {"hdr.t.k8": 1})
    pe.action.action_profile_member_id = 1
    g = p4runtime_pb2.PacketReplicationEngineEntry()
    g.multicast_group_entry.multicast_group_id = 7
    g.multicast_group_entry.replicas.add(port=b"\x03", instance=1)
    reg = p4runtime_pb2.RegisterEntry(register_id=names.id_of("registers", "last_port"))
    reg.index.index = 5
    reg.data.bitstring = b"\x2a"
    client.write(
        ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)),
        ins(names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "lpm_hit", v=8)),
        update("m", action_profile_member=m),
        ins(pe),
        update("p", packet_replication_engine_entry=g),
        update("r", "MODIFY", register_entry=reg),
    )


def _all_tables(client) -> dict[int, int]:
    counts: dict[int, int] = {}
    for e in client.read(entity(table_entry=p4runtime_pb2.TableEntry())):
        counts[e.table_entry.table_id] = counts.get(e.table_entry.table_id, 0) + 1
    return counts


def test_verify_changes_nothing_and_bad_configs_are_refused(client, names, rt_config, rig) -> None:
    _fill(client, names)
    client.set_pipeline(rt_config[0], rt_config[1], action="VERIFY")
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [2]
    other = build_p4info(load_device_config(rt_config[1]).model)
    other.tables[0].match_fields[0].bitwidth = 47
    code, details = _code(lambda: client.set_pipeline(other, rt_config[1]))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "match fields of table" in details
    code, details = _code(lambda: client.set_pipeline(rt_config[0], b'{"pipelines": []}'))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "BMv2 JSON" in details
    broken = json.loads(rt_config[1])
    broken["files"][broken["main"]] = broken["files"][broken["main"]].replace("apply {\n        port_pkts", "apply { x")
    code, details = _code(lambda: client.set_pipeline(rt_config[0], json.dumps(broken).encode()))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "rt_all.p4:" in details  # file:line:col of the error
    code, _ = _code(lambda: client.set_pipeline(rt_config[0], rt_config[1], action="UNSPECIFIED"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    code, _ = _code(client.commit)
    assert code == grpc.StatusCode.NOT_FOUND  # no saved config (spec: COMMIT)
    # nothing of the above touched the running pipeline
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [2]
    assert _all_tables(client)[names.table_id("exact_t")] == 1


def test_empty_p4info_means_the_generated_one(rig, rt_config) -> None:
    c = RawClient(rig.server.bound_port, device_id=1)
    try:
        c.arbitrate(1)
        c.set_pipeline(None, rt_config[1])
        assert c.get_pipeline("P4INFO_AND_COOKIE").p4info == rt_config[0]
    finally:
        c.close()


def test_verify_and_commit_clears_entries(client, names, rt_config, rig) -> None:
    _fill(client, names)
    client.set_pipeline(rt_config[0], rt_config[1], action="VERIFY_AND_COMMIT")
    assert _all_tables(client) == {names.table_id("const_t"): 1}
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [0]


def test_save_then_commit_replays_writes_made_in_between(client, names, rt_config, rig) -> None:
    _fill(client, names)
    client.set_pipeline(rt_config[0], rt_config[1], action="VERIFY_AND_SAVE", cookie=5)
    g = p4runtime_pb2.PacketReplicationEngineEntry()
    g.multicast_group_entry.multicast_group_id = 7
    g.multicast_group_entry.replicas.add(port=b"\x05", instance=1)
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=6)),
                 update("p", packet_replication_engine_entry=g))
    # reads see the saved pipeline; until COMMIT the old pipeline forwards
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [2]
    assert [p for p, _ in rig.send(1, tframe(mark=0xA1))] == [3]
    client.commit()
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [6]
    assert _all_tables(client) == {names.table_id("exact_t"): 1, names.table_id("const_t"): 1}
    assert client.get_pipeline("COOKIE_ONLY").cookie.cookie == 5
    pre = client.read(entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()))
    assert [e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id for e in pre] == [7]
    assert [p for p, _ in rig.send(1, tframe(mark=0xA1))] == [5]


def test_reconcile_with_the_same_program_keeps_everything(client, names, rt_config, rig) -> None:
    _fill(client, names)
    before = client.read(entity(table_entry=p4runtime_pb2.TableEntry()),
                         entity(action_profile_member=p4runtime_pb2.ActionProfileMember()),
                         entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()))
    client.set_pipeline(rt_config[0], rt_config[1], action="RECONCILE_AND_COMMIT")
    after = client.read(entity(table_entry=p4runtime_pb2.TableEntry()),
                        entity(action_profile_member=p4runtime_pb2.ActionProfileMember()),
                        entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()))
    assert sorted(e.SerializeToString() for e in after) == sorted(e.SerializeToString() for e in before)
    r = p4runtime_pb2.RegisterEntry(register_id=names.id_of("registers", "last_port"))
    r.index.index = 5
    assert client.read(entity(register_entry=r))[0].register_entry.data.bitstring == b"\x2a"
    assert [(p, t_out(f)) for p, f in rig.send(1, tframe(k8=1))] == [(4, 9)]
    assert sorted(p for p, _ in rig.send(1, tframe(mark=0xA1))) == [3]


def test_reconcile_to_a_changed_program_drops_what_no_longer_fits(client, names, rig) -> None:
    _fill(client, names)
    v2 = device_config_from_file(RT_V2)
    v2_info = build_p4info(load_device_config(v2).model)
    client.set_pipeline(v2_info, v2, action="RECONCILE_AND_COMMIT")
    n2 = Names(v2_info)
    counts = _all_tables(client)
    assert counts.get(n2.table_id("lpm_t"), 0) == 0  # its key changed: entry dropped
    assert counts[n2.table_id("exact_t")] == 1 and counts[n2.table_id("prof_t")] == 1
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [2]
