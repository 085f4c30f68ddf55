"""Action profiles, selectors with watch ports, counters, meters, registers, PRE, digests."""

from __future__ import annotations

from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.conftest import tframe, t_out
from tests.p4runtime.p4rt_client import entity, enc, ins, update

DST = 0x0A0000000001


def member(names, mid: int, action: str, **params) -> p4runtime_pb2.ActionProfileMember:
    m = p4runtime_pb2.ActionProfileMember(action_profile_id=names.id_of("action_profiles", "ap"), member_id=mid)
    m.action.CopyFrom(names.act(action, **params))
    return m


def smember(names, mid: int, action: str, **params) -> p4runtime_pb2.ActionProfileMember:
    m = member(names, mid, action, **params)
    m.action_profile_id = names.id_of("action_profiles", "as_sel")
    return m


def group(names, gid: int, members: list[tuple[int, int, int | None]]) -> p4runtime_pb2.ActionProfileGroup:
    g = p4runtime_pb2.ActionProfileGroup(action_profile_id=names.id_of("action_profiles", "as_sel"), group_id=gid)
    for mid, weight, watch in members:
        mem = g.members.add(member_id=mid, weight=weight)
        if watch is not None:
            mem.watch_port = enc(watch)
    return g


def test_action_profile_members(client, names, rig) -> None:
    client.write(update("m", action_profile_member=member(names, 1, "set_out", v=0x11)),
                 update("m", action_profile_member=member(names, 2, "fwd_out", port=7, v=0x22)))
    e = names.entry("prof_t", {"hdr.t.k8": 3})
    e.action.action_profile_member_id = 2
    client.write(ins(e))
    out = rig.send(1, tframe(k8=3))
    assert [(p, t_out(f)) for p, f in out] == [(7, 0x22)]
    client.write(update("m", "MODIFY", action_profile_member=member(names, 2, "fwd_out", port=6, v=0x33)))
    assert [(p, t_out(f)) for p, f in rig.send(1, tframe(k8=3))] == [(6, 0x33)]
    got = client.read(entity(action_profile_member=p4runtime_pb2.ActionProfileMember()))
    assert sorted(m.action_profile_member.member_id for m in got) == [1, 2]
    read_e = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("prof_t"))))
    assert read_e[0].table_entry.action.action_profile_member_id == 2
    # a member in use cannot go; a direct action on a profile table is refused
    direct = names.entry("prof_t", {"hdr.t.k8": 4}, "set_out", v=1)
    codes = client.write_codes(update("m", "DELETE", action_profile_member=member(names, 2, "set_out", v=0)),
                               ins(direct))
    assert codes == [code_pb2.FAILED_PRECONDITION, code_pb2.INVALID_ARGUMENT]
    client.write(ins(e, "DELETE"), update("m", "DELETE", action_profile_member=member(names, 2, "set_out", v=0)))
    got = client.read(entity(action_profile_member=p4runtime_pb2.ActionProfileMember()))
    assert [m.action_profile_member.member_id for m in got] == [1]


def test_selector_group_weights_and_watch_port(client, names, rig) -> None:
    client.write(update("m", action_profile_member=smember(names, 1, "fwd_out", port=1, v=1)),
                 update("m", action_profile_member=smember(names, 2, "fwd_out", port=2, v=2)),
                 update("g", action_profile_group=group(names, 10, [(1, 1, 1), (2, 3, 2)])))
    e = names.entry("sel_t", {"hdr.t.k16": 9})
    e.action.action_profile_group_id = 10
    client.write(ins(e))
    ports = [rig.send(5, tframe(k16=9, sel=s))[0][0] for s in range(200)]
    assert set(ports) == {1, 2}
    # weights and watch ports reach the switch's selector as written
    assert rig.device.switch.act_prof_groups("RtIngress.as_sel")[10].members == [(1, 1, 1), (2, 3, 2)]
    rig.device.set_port_status(2, False)  # the watch port goes down: member 2 is skipped at once
    assert {rig.send(5, tframe(k16=9, sel=s))[0][0] for s in range(50)} == {1}
    rig.device.set_port_status(2, True)
    got = client.read(entity(action_profile_group=p4runtime_pb2.ActionProfileGroup()))
    g = got[0].action_profile_group
    assert g.group_id == 10 and [(m.member_id, m.weight, m.watch_port) for m in g.members] == [
        (1, 1, b"\x01"), (2, 3, b"\x02")]
    client.write(update("g", "MODIFY", action_profile_group=group(names, 10, [(1, 1, None)])))
    assert {rig.send(5, tframe(k16=9, sel=s))[0][0] for s in range(30)} == {1}
    codes = client.write_codes(update("g", action_profile_group=group(names, 11, [(99, 1, None)])),
                               update("g", action_profile_group=group(names, 12, [(1, 0, None)])),
                               update("g", "DELETE", action_profile_group=group(names, 10, [])))
    assert codes == [code_pb2.NOT_FOUND, code_pb2.INVALID_ARGUMENT, code_pb2.FAILED_PRECONDITION]


def test_one_shot_action_set(client, names, rig) -> None:
    e = names.entry("sel_t", {"hdr.t.k16": 4})
    aset = e.action.action_profile_action_set
    for port in (3, 4):
        apa = aset.action_profile_actions.add(weight=1)
        apa.action.CopyFrom(names.act("fwd_out", port=port, v=port))
        apa.watch_port = enc(port)
    client.write(ins(e))
    assert {rig.send(1, tframe(k16=4, sel=s))[0][0] for s in range(60)} == {3, 4}
    rig.device.set_port_status(4, False)
    assert {rig.send(1, tframe(k16=4, sel=s))[0][0] for s in range(30)} == {3}
    rig.device.set_port_status(4, True)
    got = client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("sel_t"))))
    assert got[0].table_entry.action.action_profile_action_set == aset
    # the server's own members and groups are not the controller's
    assert client.read(entity(action_profile_group=p4runtime_pb2.ActionProfileGroup())) == []
    client.write(ins(names.entry("sel_t", {"hdr.t.k16": 4}), "DELETE"))
    assert client.read(entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table_id("sel_t")))) == []


def test_counters_direct_counters_and_registers(client, names, rig) -> None:
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)))
    frame = tframe(dst=DST)
    for _ in range(3):
        rig.send(7, frame)
    cid = names.id_of("counters", "port_pkts")
    c = p4runtime_pb2.CounterEntry(counter_id=cid)
    c.index.index = 7
    got = client.read(entity(counter_entry=c))[0].counter_entry
    assert got.data.packet_count == 3 and got.data.byte_count == 3 * len(frame)
    assert len(client.read(entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=cid)))) == 64
    c.data.packet_count, c.data.byte_count = 100, 1000
    client.write(update("c", "MODIFY", counter_entry=c))
    assert client.read(entity(counter_entry=c))[0].counter_entry.data.packet_count == 100
    # direct counter: in the table entry read (when asked) and as DirectCounterEntry
    te = p4runtime_pb2.TableEntry(table_id=names.table_id("exact_t"))
    te.counter_data.SetInParent()
    assert client.read(entity(table_entry=te))[0].table_entry.counter_data.packet_count == 3
    dce = p4runtime_pb2.DirectCounterEntry()
    dce.table_entry.CopyFrom(names.entry("exact_t", {"hdr.eth.dst_addr": DST}))
    got = client.read(entity(direct_counter_entry=dce))[0].direct_counter_entry
    assert got.data.packet_count == 3 and got.data.byte_count == 3 * len(frame)
    dce.data.packet_count = 42
    client.write(update("d", "MODIFY", direct_counter_entry=dce))
    assert client.read(entity(direct_counter_entry=dce))[0].direct_counter_entry.data.packet_count == 42
    # register written by the pipeline, then by the controller
    rid = names.id_of("registers", "last_port")
    r = p4runtime_pb2.RegisterEntry(register_id=rid)
    r.index.index = 0
    assert client.read(entity(register_entry=r))[0].register_entry.data.bitstring == b"\x07"
    r.data.bitstring = enc(0xDEAD)
    client.write(update("r", "MODIFY", register_entry=r))
    assert client.read(entity(register_entry=r))[0].register_entry.data.bitstring == b"\xde\xad"
    r.index.index = 16
    assert client.write_codes(update("r", "MODIFY", register_entry=r)) == [code_pb2.OUT_OF_RANGE]


def test_meters_and_direct_meters(client, names, rig) -> None:
    mid = names.id_of("meters", "police")
    m = p4runtime_pb2.MeterEntry(meter_id=mid)
    m.index.index = 3
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 1, 1, 2, 2
    client.write(update("m", "MODIFY", meter_entry=m))
    assert client.read(entity(meter_entry=m))[0].meter_entry.config == m.config
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)))
    colours = [rig.send(1, tframe(dst=DST, k8=3))[0][1][14 + 12] for _ in range(5)]
    assert colours[0] == 0 and colours[-1] == 2  # green first, red once both buckets are empty
    # direct meter config on the lpm entry
    e = names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}, "lpm_hit", v=1)
    client.write(ins(e))
    dme = p4runtime_pb2.DirectMeterEntry()
    dme.table_entry.CopyFrom(names.entry("lpm_t", {"hdr.t.key32": ("lpm", 0x0A000000, 8)}))
    dme.config.cir, dme.config.cburst, dme.config.pir, dme.config.pburst = 100, 100, 200, 200
    client.write(update("d", "MODIFY", direct_meter_entry=dme))
    got = client.read(entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry()))
    assert len(got) == 1 and got[0].direct_meter_entry.config == dme.config
    bad = p4runtime_pb2.MeterEntry(meter_id=mid)
    bad.index.index = 99
    bad.config.cir, bad.config.pir = 1, 1
    assert client.write_codes(update("m", "MODIFY", meter_entry=bad)) == [code_pb2.OUT_OF_RANGE]


def pre(**kw) -> p4runtime_pb2.PacketReplicationEngineEntry:
    p = p4runtime_pb2.PacketReplicationEngineEntry()
    for k, v in kw.items():
        getattr(p, k).CopyFrom(v)
    return p


def test_multicast_groups_and_clone_sessions(client, names, rig) -> None:
    g = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=7)
    for port in (1, 2, 3):
        g.replicas.add(port=enc(port), instance=port)
    client.write(update("p", packet_replication_engine_entry=pre(multicast_group_entry=g)))
    assert sorted(p for p, _ in rig.send(9, tframe(mark=0xA1))) == [1, 2, 3]
    got = client.read(entity(packet_replication_engine_entry=pre(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry(multicast_group_id=7))))
    assert got[0].packet_replication_engine_entry.multicast_group_entry == g
    del g.replicas[2]
    client.write(update("p", "MODIFY", packet_replication_engine_entry=pre(multicast_group_entry=g)))
    assert sorted(p for p, _ in rig.send(9, tframe(mark=0xA1))) == [1, 2]
    assert client.write_codes(update("p", packet_replication_engine_entry=pre(multicast_group_entry=g))) == [
        code_pb2.ALREADY_EXISTS]
    client.write(update("p", "DELETE", packet_replication_engine_entry=pre(multicast_group_entry=g)))
    assert client.write_codes(update("p", "DELETE", packet_replication_engine_entry=pre(multicast_group_entry=g))) == [
        code_pb2.NOT_FOUND]
    # clone session 5: the original goes to port 2, the clone to port 8
    client.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)))
    cs = p4runtime_pb2.CloneSessionEntry(session_id=5)
    cs.replicas.add(port=enc(8), instance=1)
    client.write(update("p", packet_replication_engine_entry=pre(clone_session_entry=cs)))
    assert sorted(p for p, _ in rig.send(1, tframe(dst=DST, mark=0xC1))) == [2, 8]
    got = client.read(entity(packet_replication_engine_entry=pre(clone_session_entry=p4runtime_pb2.CloneSessionEntry())))
    assert got[0].packet_replication_engine_entry.clone_session_entry == cs


def test_digest_lists_reach_the_primary(client, names, rig) -> None:
    did = names.id_of("digests", "learn_t")
    d = p4runtime_pb2.DigestEntry(digest_id=did)
    d.config.max_list_size = 1
    client.write(update("d", digest_entry=d))
    assert client.read(entity(digest_entry=p4runtime_pb2.DigestEntry()))[0].digest_entry.digest_id == did
    rig.send(6, tframe(src=0x020000000042, mark=0xD1))
    lst = client.next("digest")
    assert lst.digest_id == did
    members = [m.bitstring for m in lst.data[0].struct.members]
    assert members == [enc(0x020000000042), b"\x06"]
    # with an ack timeout the same learned data is not sent again until acknowledged
    d.config.ack_timeout_ns = 10_000_000_000
    client.write(update("d", "MODIFY", digest_entry=d))
    rig.send(6, tframe(src=0x020000000043, mark=0xD1))
    first = client.next("digest")
    rig.send(6, tframe(src=0x020000000043, mark=0xD1))
    rig.send(6, tframe(src=0x020000000044, mark=0xD1))
    second = client.next("digest")
    assert second.data[0].struct.members[0].bitstring == enc(0x020000000044)
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = did, first.list_id
    client.send(ack)
    import time
    deadline = time.monotonic() + 5  # the ack travels on the stream
    while first.list_id in rig.server.digest_lists.outstanding and time.monotonic() < deadline:
        time.sleep(0.01)
    rig.send(6, tframe(src=0x020000000043, mark=0xD1))
    assert client.next("digest").data[0].struct.members[0].bitstring == enc(0x020000000043)
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.digest_ack.digest_id = 0x17FFFFFF
    client.send(bad)
    assert client.next("error").canonical_code == code_pb2.NOT_FOUND
