"""ROLLBACK_ON_ERROR / DATAPLANE_ATOMIC: a failing batch leaves no trace; a good one applies."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.conftest import tframe, t_out
from tests.p4runtime.p4rt_client import enc, entity, errors_of, ins, update

DST = 0x0A0000000001


def _everything(client) -> list[bytes]:
    te = p4runtime_pb2.TableEntry()
    te.counter_data.SetInParent()
    te.meter_config.SetInParent()
    ents = client.read(
        entity(table_entry=te),
        entity(action_profile_member=p4runtime_pb2.ActionProfileMember()),
        entity(action_profile_group=p4runtime_pb2.ActionProfileGroup()),
        entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()),
        entity(counter_entry=p4runtime_pb2.CounterEntry()),
        entity(register_entry=p4runtime_pb2.RegisterEntry()),
        entity(meter_entry=p4runtime_pb2.MeterEntry()),
        entity(digest_entry=p4runtime_pb2.DigestEntry()),
    )
    for tid in {e.table_entry.table_id for e in ents if e.WhichOneof("entity") == "table_entry"}:
        ents += client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=tid, is_default_action=True)))
    return sorted(e.SerializeToString(deterministic=True) for e in ents)


def _write(client, atomicity: str, *updates) -> list[int]:
    req = p4runtime_pb2.WriteRequest(device_id=1, updates=list(updates),
                                     atomicity=getattr(p4runtime_pb2.WriteRequest, atomicity))
    req.election_id.low = client.election_id
    try:
        client.stub.Write(req, timeout=30)
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.UNKNOWN
        return [e.canonical_code for e in errors_of(exc)]
    return [0] * len(updates)


def _batch(names):
    mem = p4runtime_pb2.ActionProfileMember(action_profile_id=names.id_of("action_profiles", "ap"), member_id=4)
    mem.action.CopyFrom(names.act("set_out", v=4))
    g = p4runtime_pb2.PacketReplicationEngineEntry()
    g.multicast_group_entry.multicast_group_id = 7
    g.multicast_group_entry.replicas.add(port=enc(9), instance=1)
    reg = p4runtime_pb2.RegisterEntry(register_id=names.id_of("registers", "last_port"))
    reg.index.index = 3
    reg.data.bitstring = enc(77)
    cnt = p4runtime_pb2.CounterEntry(counter_id=names.id_of("counters", "port_pkts"))
    cnt.index.index = 2
    cnt.data.packet_count = 5
    d = p4runtime_pb2.TableEntry(table_id=names.table_id("lpm_t"), is_default_action=True)
    d.action.action.CopyFrom(names.act("lpm_hit", v=0x99))
    modified = names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=6)
    modified.counter_data.packet_count = 1000
    return [
        ins(names.entry("exact_t", {"hdr.eth.dst_addr": 0x55}, "fwd", port=1)),
        ins(modified, "MODIFY"),
        ins(names.entry("exact_t", {"hdr.eth.dst_addr": 0x66}), "DELETE"),
        ins(d, "MODIFY"),
        update("m", action_profile_member=mem),
        update("p", "MODIFY", packet_replication_engine_entry=g),
        update("r", "MODIFY", register_entry=reg),
        update("c", "MODIFY", counter_entry=cnt),
    ]


@pytest.mark.parametrize("atomicity", ["ROLLBACK_ON_ERROR", "DATAPLANE_ATOMIC"])
def test_failing_batch_is_rolled_back(client, names, rig, atomicity) -> None:
    g = p4runtime_pb2.PacketReplicationEngineEntry()
    g.multicast_group_entry.multicast_group_id = 7
    g.multicast_group_entry.replicas.add(port=enc(3), instance=1)
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)),
                 ins(names.entry("exact_t", {"hdr.eth.dst_addr": 0x66}, "fwd", port=3)),
                 update("p", packet_replication_engine_entry=g))
    rig.send(1, tframe(dst=DST))
    before = _everything(client)
    batch = _batch(names) + [ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=1))]  # exists
    codes = _write(client, atomicity, *batch)
    assert codes[-1] == code_pb2.ALREADY_EXISTS and set(codes[:-1]) == {code_pb2.ABORTED}
    assert _everything(client) == before
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [2]
    assert sorted(p for p, _ in rig.send(1, tframe(mark=0xA1))) == [3]


def test_good_atomic_batch_applies_everything(client, names, rig) -> None:
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)),
                 ins(names.entry("exact_t", {"hdr.eth.dst_addr": 0x66}, "fwd", port=3)))
    g = p4runtime_pb2.PacketReplicationEngineEntry()
    g.multicast_group_entry.multicast_group_id = 7
    g.multicast_group_entry.replicas.add(port=enc(3), instance=1)
    client.write(update("p", packet_replication_engine_entry=g))
    assert _write(client, "ROLLBACK_ON_ERROR", *_batch(names)) == [0] * 8
    assert [p for p, _ in rig.send(1, tframe(dst=DST))] == [6]
    assert t_out(rig.send(1, tframe(dst=DST, key32=1))[0][1]) == 0x99
    assert sorted(p for p, _ in rig.send(1, tframe(mark=0xA1))) == [9]
