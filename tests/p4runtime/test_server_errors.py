"""Error codes per update, batches that apply the good updates, arbitration, malformed input."""

from __future__ import annotations

import gc
import resource

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.p4rt_client import RawClient, entity, errors_of, ins, update


def test_every_error_code_with_the_rest_of_the_batch_applied(client, names, rig) -> None:
    ex = "hdr.eth.dst_addr"
    good1 = names.entry("exact_t", {ex: 1}, "fwd", port=1)
    good2 = names.entry("exact_t", {ex: 2}, "fwd", port=2)
    unknown_table = names.entry("exact_t", {ex: 3}, "fwd", port=1)
    unknown_table.table_id = 0x02FFFFFF
    too_wide = names.entry("exact_t", {ex: 4}, "fwd", port=1)
    too_wide.action.action.params[0].value = b"\x02\x00"  # 512 in a 9-bit param
    padded = names.entry("exact_t", {ex: 5}, "fwd", port=1)
    padded.match[0].exact.value = b"\x00" * 7 + b"\x05"  # 8 bytes for 48 bits: longer than needed, accepted
    non_canonical_lpm = names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000001, 8)}, "lpm_hit", v=1)
    no_priority = names.entry("acl_t", {"hdr.t.k16": ("ternary", 1, 1)}, "set_out", v=1)
    extra_priority = names.entry("exact_t", {ex: 6}, "fwd", priority=3, port=1)
    dont_care = names.entry("acl_t", {"hdr.t.k16": ("ternary", 0, 0)}, "set_out", priority=1, v=1)
    counter = p4runtime_pb2.CounterEntry(counter_id=names.id_of("counters", "port_pkts"))
    counter.index.index = 64
    value_set = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    value_set.entity.value_set_entry.value_set_id = 1
    batch = [
        ins(good1),
        ins(good1),                                            # ALREADY_EXISTS
        ins(names.entry("exact_t", {ex: 99}), "DELETE"),       # NOT_FOUND
        ins(unknown_table),                                    # INVALID_ARGUMENT
        ins(too_wide),                                         # OUT_OF_RANGE (spec 8.3)
        ins(padded),                                           # OK
        ins(non_canonical_lpm),                                # INVALID_ARGUMENT (bits past the prefix)
        ins(no_priority),                                      # INVALID_ARGUMENT
        ins(extra_priority),                                   # INVALID_ARGUMENT
        ins(dont_care),                                        # INVALID_ARGUMENT
        update("c", "MODIFY", counter_entry=counter),          # OUT_OF_RANGE
        value_set,                                             # INVALID_ARGUMENT (only MODIFY, spec 9.5)
        ins(good2),
    ]
    codes = client.write_codes(*batch)
    assert codes == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT,
                     code_pb2.OUT_OF_RANGE, code_pb2.OK] + [code_pb2.INVALID_ARGUMENT] * 4 + [
        code_pb2.OUT_OF_RANGE, code_pb2.INVALID_ARGUMENT, code_pb2.OK]
    got = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t"))))
    assert sorted(e.table_entry.match[0].exact.value for e in got) == [b"\x01", b"\x02", b"\x05"]
    # RESOURCE_EXHAUSTED: acl_t holds 4 entries; the fifth is refused, the others stay
    acl = [ins(names.entry("acl_t", {"hdr.t.k16": ("ternary", i, 0xFFFF)}, "set_out", priority=1, v=i))
           for i in range(1, 6)]
    assert client.write_codes(*acl) == [0, 0, 0, 0, code_pb2.RESOURCE_EXHAUSTED]
    assert len(client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("acl_t"))))) == 4
    # MODIFY of a missing entry, idle timeout on a table without it
    idle = names.entry("exact_t", {ex: 7}, "fwd", port=1)
    idle.idle_timeout_ns = 1000
    assert client.write_codes(ins(names.entry("exact_t", {ex: 42}, "fwd", port=1), "MODIFY"), ins(idle)) == [
        code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT]
    # the error messages name the table and field
    with pytest.raises(grpc.RpcError) as refused:
        client.write(ins(too_wide))
    message = errors_of(refused.value)[0].message
    assert "exact_t" in message and "port" in message, message


def test_primary_and_backup(rig, rt_config, names) -> None:
    a = RawClient(rig.server.bound_port, device_id=1)
    b = RawClient(rig.server.bound_port, device_id=1)
    try:
        assert a.arbitrate(5).status.code == code_pb2.OK
        upd = b.arbitrate(3)
        assert upd.status.code == code_pb2.ALREADY_EXISTS and upd.election_id.low == 5
        a.set_pipeline(rt_config[0], rt_config[1])
        with pytest.raises(grpc.RpcError) as ei:
            b.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": 1}, "fwd", port=1)))
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as ei:
            b.set_pipeline(rt_config[0], rt_config[1])
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert b.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t")))) == []
        # b raises its election id: both hear the new primary
        assert b.arbitrate(8).status.code == code_pb2.OK
        upd = a.next("arbitration")
        assert upd.status.code == code_pb2.ALREADY_EXISTS and upd.election_id.low == 8
        b.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": 1}, "fwd", port=1)))
        with pytest.raises(grpc.RpcError) as ei:
            a.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": 2}, "fwd", port=1)))
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        # the primary leaves: no primary (a's 5 is below the highest seen, 8) until a re-arbitrates
        b.close()
        upd = a.next("arbitration")
        assert upd.status.code == code_pb2.NOT_FOUND and upd.election_id.low == 8
        with pytest.raises(grpc.RpcError) as ei:
            a.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": 2}, "fwd", port=1)))
        assert ei.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert a.arbitrate(8).status.code == code_pb2.OK
        a.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": 2}, "fwd", port=1)))
        # a duplicate election id ends the new stream with INVALID_ARGUMENT
        c = RawClient(rig.server.bound_port, device_id=1)
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 1
        req.arbitration.election_id.low = 8
        c.send(req)
        with pytest.raises(grpc.RpcError) as ei:
            c.next("arbitration")
        assert ei.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        c.close()
    finally:
        a.close()
        b.close()


def test_wrong_device_and_stream_misuse(rig) -> None:
    c = RawClient(rig.server.bound_port, device_id=9)
    try:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 9
        c.send(req)
        with pytest.raises(grpc.RpcError) as ei:
            c.next("arbitration")
        assert ei.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        c.close()
    c = RawClient(rig.server.bound_port, device_id=1)
    try:
        c.send(p4runtime_pb2.StreamMessageRequest(packet=p4runtime_pb2.PacketOut(payload=b"x")))
        with pytest.raises(grpc.RpcError) as ei:
            c.next("arbitration")
        assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        c.close()


def test_malformed_requests_never_crash_or_half_apply(client, names, rig) -> None:
    # raw garbage where a WriteRequest belongs
    call = client.channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=lambda b: b,
                                      response_deserializer=lambda b: b)
    for junk in (b"\xff\xff\xff", b"\x0a\x05\x01", bytes(range(256))):
        with pytest.raises(grpc.RpcError):
            call(junk, timeout=5)
    # semantic junk: empty entity, unspecified type, one-shot set whose 2nd action is bad
    e = names.entry("sel_t", {"hdr.t.k16": 1})
    good = e.action.action_profile_action_set.action_profile_actions.add(weight=1)
    good.action.CopyFrom(names.act("fwd_out", port=1, v=1))
    bad = e.action.action_profile_action_set.action_profile_actions.add(weight=1)
    bad.action.CopyFrom(names.act("fwd_out", port=1, v=1))
    bad.action.params[0].value = b"\xff\xff"
    codes = client.write_codes(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT),
                               p4runtime_pb2.Update(entity=entity(table_entry=names.entry("exact_t", {}))),
                               ins(e))
    assert codes == [code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT, code_pb2.OUT_OF_RANGE]
    assert client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("sel_t")))) == []
    # a one-shot set whose group cannot be made (member ok, table entry then fails) leaves nothing
    e2 = names.entry("sel_t", {"hdr.t.k16": 2})
    apa = e2.action.action_profile_action_set.action_profile_actions.add(weight=1)
    apa.action.CopyFrom(names.act("fwd_out", port=1, v=1))
    client.write(ins(e2))
    assert client.write_codes(ins(e2)) == [code_pb2.ALREADY_EXISTS]
    sw = rig.device.switch
    assert len(sw.act_prof_groups("RtIngress.as_sel")) == 1
    assert len(sw.act_prof_members("RtIngress.as_sel")) == 1
    # the server still serves
    assert client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_memory_stable_across_100000_refused_writes(client, names) -> None:
    bad = names.entry("exact_t", {"hdr.eth.dst_addr": 1}, "fwd", port=1)
    bad.action.action.params[0].value = b"\x02\x00"
    batch = [ins(bad)] * 1000
    client.write_codes(*batch)  # warm up
    gc.collect()
    before = _rss_kib()
    for _ in range(100):
        codes = client.write_codes(*batch)
        assert codes[-1] == code_pb2.OUT_OF_RANGE
    gc.collect()
    grown = _rss_kib() - before
    assert grown < 64 * 1024, f"RSS grew by {grown} KiB over 100,000 refused writes"


def test_garbage_on_the_stream_ends_that_stream_only(client, rig) -> None:
    stream = client.channel.stream_stream("/p4.v1.P4Runtime/StreamChannel", request_serializer=lambda b: b,
                                          response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError):
        for _ in stream(iter([b"\xff\xfe\xfd\x00\x01"]), timeout=5):
            pass
    # an unknown 'other' message is answered with a StreamError, the stream stays open
    other = p4runtime_pb2.StreamMessageRequest()
    other.other.type_url = "type.googleapis.com/nothing.Known"
    client.send(other)
    err = client.next("error")
    assert err.canonical_code == code_pb2.INVALID_ARGUMENT
    assert client.arbitrate(10).status.code == code_pb2.OK
