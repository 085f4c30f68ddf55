"""Table entries over real gRPC: every match kind, defaults, const tables, reads, packets."""

from __future__ import annotations

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.conftest import CPU_PORT, tframe, t_out
from tests.p4runtime.p4rt_client import RawClient, entity, ins

DST = 0x0A0000000001


def test_capabilities_and_no_pipeline_yet(rig) -> None:
    c = RawClient(rig.server.bound_port, device_id=1)
    try:
        assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version.startswith("1.4")
        # no pipeline yet: Get answers with the config unset (spec), Write/Read refuse
        resp = c.stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1))
        assert not resp.HasField("config")
        c.arbitrate(3)
        with pytest.raises(grpc.RpcError) as ei:
            c.write(ins(p4runtime_pb2.TableEntry(table_id=1)))
        assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.RpcError) as ei:
            c.read(entity(table_entry=p4runtime_pb2.TableEntry()))
        assert ei.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        c.close()


def test_get_pipeline_response_types(client, rt_config) -> None:
    client.set_pipeline(rt_config[0], rt_config[1], cookie=77)
    full = client.get_pipeline("ALL")
    assert full.p4info == rt_config[0] and full.p4_device_config == rt_config[1] and full.cookie.cookie == 77
    cookie = client.get_pipeline("COOKIE_ONLY")
    assert cookie.cookie.cookie == 77 and not cookie.HasField("p4info") and not cookie.p4_device_config
    p4i = client.get_pipeline("P4INFO_AND_COOKIE")
    assert p4i.p4info == rt_config[0] and not p4i.p4_device_config
    dev = client.get_pipeline("DEVICE_CONFIG_AND_COOKIE")
    assert dev.p4_device_config == rt_config[1] and not dev.HasField("p4info")


def test_exact_insert_modify_delete_steers_packets(client, names, rig) -> None:
    frame = tframe(dst=DST)
    assert [p for p, _ in rig.send(1, frame)] == [0]  # miss: NoAction leaves egress_spec at 0
    e = names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=3)
    client.write(ins(e))
    assert [p for p, _ in rig.send(1, frame)] == [3]
    got = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t"))))
    assert len(got) == 1 and got[0].table_entry == e
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=5), "MODIFY"))
    assert [p for p, _ in rig.send(1, frame)] == [5]
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}), "DELETE"))
    assert [p for p, _ in rig.send(1, frame)] == [0]
    assert client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t")))) == []


def _to_port(client, names, port: int = 2) -> None:
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=port)))


def test_lpm_longest_prefix_wins(client, names, rig) -> None:
    _to_port(client, names)
    client.write(
        ins(names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "lpm_hit", v=8)),
        ins(names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A010000, 16)}, "lpm_hit", v=16)),
    )
    assert t_out(rig.send(1, tframe(dst=DST, key32=0x0A010203))[0][1]) == 16
    assert t_out(rig.send(1, tframe(dst=DST, key32=0x0A020203))[0][1]) == 8
    assert t_out(rig.send(1, tframe(dst=DST, key32=0x0B000000))[0][1]) == 0


def test_ternary_range_optional_with_priorities(client, names, rig) -> None:
    _to_port(client, names)
    client.write(
        ins(names.entry("acl_t", {"hdr.t.k16": ("ternary", 0x1200, 0xFF00)}, "set_out", priority=10, v=1)),
        ins(names.entry("acl_t", {"hdr.t.k16": ("ternary", 0x1234, 0xFFFF), "hdr.t.k8": ("range", 5, 9)},
                        "set_out", priority=20, v=2)),
        ins(names.entry("acl_t", {"hdr.eth.ether_type": ("optional", 0x88B5), "hdr.t.k8": ("range", 100, 110)},
                        "set_out", priority=5, v=3)),
    )
    assert t_out(rig.send(1, tframe(dst=DST, k16=0x1234, k8=7))[0][1]) == 2
    assert t_out(rig.send(1, tframe(dst=DST, k16=0x1234, k8=1))[0][1]) == 1
    assert t_out(rig.send(1, tframe(dst=DST, k16=0x9999, k8=105))[0][1]) == 3
    got = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("acl_t"))))
    assert sorted(e.table_entry.priority for e in got) == [5, 10, 20]
    # a specific read by match and priority
    want = names.entry("acl_t", {"hdr.t.k16": ("ternary", 0x1200, 0xFF00)}, priority=10)
    one = client.read(entity(table_entry=want))
    assert len(one) == 1 and one[0].table_entry.action.action.action_id == names.action_id("set_out")


def test_default_entry_modify_reset_and_const(client, names, rig) -> None:
    _to_port(client, names)
    lpm = names.table_id("lpm_t")
    default = p4runtime_pb2.TableEntry(table_id=lpm, is_default_action=True)
    got = client.read(entity(table_entry=default))
    assert got[0].table_entry.action.action.action_id == names.action_id("NoAction")
    # lpm_hit is not @defaultonly-restricted; NoAction is @defaultonly: both may be defaults
    d = p4runtime_pb2.TableEntry(table_id=lpm, is_default_action=True)
    d.action.action.CopyFrom(names.act("lpm_hit", v=0x55))
    client.write(ins(d, "MODIFY"))
    assert t_out(rig.send(1, tframe(dst=DST, key32=1))[0][1]) == 0x55
    assert client.read(entity(table_entry=default))[0].table_entry.action.action == names.act("lpm_hit", v=0x55)
    client.write(ins(p4runtime_pb2.TableEntry(table_id=lpm, is_default_action=True), "MODIFY"))  # reset
    assert t_out(rig.send(1, tframe(dst=DST, key32=1))[0][1]) == 0
    # const default action and const entries cannot be written
    cd = p4runtime_pb2.TableEntry(table_id=names.table_id("const_t"), is_default_action=True)
    cd.action.action.CopyFrom(names.act("set_out", v=1))
    const_entry = names.entry("const_t", {"hdr.t.k8": 0x10}, "set_out", v=1)
    codes = client.write_codes(ins(cd, "MODIFY"), ins(const_entry), ins(d, "INSERT"))
    assert codes == [code_pb2.PERMISSION_DENIED, code_pb2.PERMISSION_DENIED, code_pb2.INVALID_ARGUMENT]
    consts = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("const_t"))))
    assert len(consts) == 1 and consts[0].table_entry.is_const
    assert t_out(rig.send(1, tframe(dst=DST, k8=0x77))[0][1]) == 0x7777


def test_wildcard_read_of_all_tables_and_large_reads_stream(client, names) -> None:
    ups = [ins(names.entry("exact_t", {"hdr.eth.dst_addr": 0x100000 + i}, "fwd", port=i % 8)) for i in range(2500)]
    client.write(*ups)
    client.write(ins(names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "lpm_hit", v=8)))
    responses = client.read_responses(entity(table_entry=p4runtime_pb2.TableEntry()))
    assert len(responses) >= 3  # more than one ReadResponse
    ents = [e for r in responses for e in r.entities]
    by_table: dict[int, int] = {}
    for e in ents:
        by_table[e.table_entry.table_id] = by_table.get(e.table_entry.table_id, 0) + 1
    assert by_table[names.table_id("exact_t")] == 2500
    assert by_table[names.table_id("lpm_t")] == 1
    assert by_table[names.table_id("const_t")] == 1


def test_packet_in_from_a_table_entry(client, names, rig) -> None:
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "to_cpu")))
    frame = tframe(dst=DST)
    assert rig.send(4, frame) == []  # nothing out of a front port
    pin = client.next("packet")
    assert pin.payload == frame
    md = {m.metadata_id: m.value for m in pin.metadata}
    assert md[names.metadata_id("packet_in", "ingress_port")] == b"\x04"


def test_packet_out_leaves_the_port_in_its_metadata(client, names, rig) -> None:
    frame = tframe(dst=0x0B0000000001)
    rig.outputs.clear()
    msg = p4runtime_pb2.StreamMessageRequest()
    msg.packet.payload = frame
    msg.packet.metadata.add(metadata_id=names.metadata_id("packet_out", "egress_port"), value=b"\x06")
    client.send(msg)
    for _ in range(100):
        if rig.outputs:
            break
        import time
        time.sleep(0.02)
    assert rig.outputs == [(6, frame)]
    # a bad PacketOut (metadata wider than the field) comes back as a StreamError
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.packet.payload = frame
    bad.packet.metadata.add(metadata_id=names.metadata_id("packet_out", "egress_port"), value=b"\x04\x00")
    client.send(bad)
    err = client.next("error")
    assert err.canonical_code == code_pb2.OUT_OF_RANGE and err.packet_out.packet_out.payload == frame
    assert CPU_PORT == 255
