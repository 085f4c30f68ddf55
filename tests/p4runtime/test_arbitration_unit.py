"""Arbitration rules and packet I/O header packing, without a network."""

from __future__ import annotations

import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime.arbitration import Arbiter, Client
from p4target.p4runtime.errors import P4RTError
from p4target.p4runtime.packet_io import build_packet_out_frame, parse_packet_in
from p4target.p4runtime.schema import FieldInfo, MetadataInfo


def arb(eid: int | None, device_id: int = 0) -> p4runtime_pb2.MasterArbitrationUpdate:
    m = p4runtime_pb2.MasterArbitrationUpdate(device_id=device_id)
    if eid is not None:
        m.election_id.low = eid
    return m


def test_highest_election_id_is_primary_and_everyone_hears_changes() -> None:
    a = Arbiter(device_id=0)
    c1, c2, c3 = Client(outbox=None), Client(outbox=None), Client(outbox=None)
    out = a.arbitrate(c1, arb(5))
    assert [(c, m.arbitration.status.code) for c, m in out] == [(c1, code_pb2.OK)]
    out = a.arbitrate(c2, arb(3))  # backup: only c2 is told
    assert [(c, m.arbitration.status.code, m.arbitration.election_id.low) for c, m in out] == [
        (c2, code_pb2.ALREADY_EXISTS, 5)]
    out = a.arbitrate(c2, arb(9))  # c2 takes over: both are told
    assert {c.ident: m.arbitration.status.code for c, m in out} == {c1.ident: code_pb2.ALREADY_EXISTS,
                                                                    c2.ident: code_pb2.OK}
    assert a.is_primary(9) and not a.is_primary(5)
    # the primary leaves: no primary until someone arbitrates with >= 9
    out = a.remove(c2)
    assert [(c, m.arbitration.status.code, m.arbitration.election_id.low) for c, m in out] == [
        (c1, code_pb2.NOT_FOUND, 9)]
    assert a.primary() is None and not a.is_primary(5)
    out = a.arbitrate(c3, arb(9))  # the old primary reconnecting with its id
    assert {c.ident: m.arbitration.status.code for c, m in out} == {c1.ident: code_pb2.ALREADY_EXISTS,
                                                                    c3.ident: code_pb2.OK}
    # the primary downgrades itself: everyone hears there is no primary
    out = a.arbitrate(c3, arb(2))
    assert {c.ident: m.arbitration.status.code for c, m in out} == {c1.ident: code_pb2.NOT_FOUND,
                                                                    c3.ident: code_pb2.NOT_FOUND}
    assert a.remove(c1) == [] and a.primary() is None


def test_bad_arbitrations() -> None:
    a = Arbiter(device_id=1)
    c1, c2 = Client(outbox=None), Client(outbox=None)
    with pytest.raises(P4RTError) as ei:
        a.arbitrate(c1, arb(1, device_id=2))
    assert ei.value.code == code_pb2.NOT_FOUND
    a.arbitrate(c1, arb(4, device_id=1))
    with pytest.raises(P4RTError) as ei:
        a.arbitrate(c2, arb(4, device_id=1))
    assert ei.value.code == code_pb2.INVALID_ARGUMENT
    role = arb(7, device_id=1)
    role.role.name = "other"
    with pytest.raises(P4RTError) as ei:
        a.arbitrate(c2, role)
    assert ei.value.code == code_pb2.UNIMPLEMENTED


def test_no_election_id_is_a_backup_and_no_primary_is_not_found() -> None:
    a = Arbiter(device_id=0)
    c = Client(outbox=None)
    (_, m), = a.arbitrate(c, arb(None))
    assert m.arbitration.status.code == code_pb2.NOT_FOUND
    assert not m.arbitration.HasField("election_id")  # no primary ever: left unset
    other = Client(outbox=None)
    a.arbitrate(other, arb(4))
    with pytest.raises(P4RTError) as ei:  # a live stream cannot change device
        a.arbitrate(other, arb(4, device_id=3))
    assert ei.value.code == code_pb2.FAILED_PRECONDITION


INFO = MetadataInfo(1, "packet_out", {1: FieldInfo(1, "egress_port", 9), 2: FieldInfo(2, "_pad", 7)})


def test_packet_out_header_packing_and_packet_in_parsing() -> None:
    msg = p4runtime_pb2.PacketOut(payload=b"\xaa\xbb")
    msg.metadata.add(metadata_id=1, value=b"\x01\x03")  # port 259
    frame = build_packet_out_frame(INFO, msg)
    assert frame == bytes([259 >> 1, (259 & 1) << 7]) + b"\xaa\xbb"
    pin = parse_packet_in(INFO, frame)
    assert pin.payload == b"\xaa\xbb"
    assert [(m.metadata_id, m.value) for m in pin.metadata] == [(1, b"\x01\x03"), (2, b"\x00")]
    bad = p4runtime_pb2.PacketOut(payload=b"x")
    bad.metadata.add(metadata_id=1, value=b"\x02\x00")  # 512 does not fit 9 bits
    with pytest.raises(P4RTError, match="egress_port"):
        build_packet_out_frame(INFO, bad)
    unknown = p4runtime_pb2.PacketOut(payload=b"x")
    unknown.metadata.add(metadata_id=7, value=b"\x01")
    with pytest.raises(P4RTError, match="id 7"):
        build_packet_out_frame(INFO, unknown)
    assert build_packet_out_frame(None, p4runtime_pb2.PacketOut(payload=b"raw")) == b"raw"


def test_digest_lists_sizes_acks_and_suppression() -> None:
    from p4target.p4runtime.digests import DigestLists

    d = DigestLists()
    cfg = p4runtime_pb2.DigestEntry.Config(max_list_size=2, ack_timeout_ns=1_000_000_000)
    rows = [(1, 1), (2, 2), (3, 3), (1, 1)]
    lists = d.lists(7, cfg, rows, now=0.0)
    assert [len(x.data) for x in lists] == [2, 1]  # 3 distinct rows in lists of at most 2
    assert len({x.list_id for x in lists}) == 2
    assert d.lists(7, cfg, [(1, 1), (4, 4)], now=0.5)[0].data[0].struct.members[0].bitstring == b"\x04"
    d.ack(7, lists[0].list_id)  # (1,1) and (2,2) are released
    again = d.lists(7, cfg, [(1, 1), (3, 3)], now=0.6)
    assert [[m.bitstring for m in x.data[0].struct.members] for x in again] == [[b"\x01", b"\x01"]]
    assert len(d.lists(7, cfg, [(3, 3)], now=2.0)) == 1  # the ack timeout passed: sent again
    no_ack = p4runtime_pb2.DigestEntry.Config()
    assert [len(x.data) for x in d.lists(8, no_ack, [(5,), (5,)], now=3.0)] == [2]  # no dedupe, one list
