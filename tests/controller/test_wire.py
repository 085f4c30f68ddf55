"""The installer's byte encoding, against messages built field by field.

Why: controller/wire.py writes P4Runtime's protobuf bytes itself (generated encoders
per entry shape, bytes remembered per match value and per set of parameter values,
a WriteRequest joined from pre-made ``updates`` fields), and a switch parses them as
P4Runtime messages. So every kind of entry it encodes is compared here, byte for
byte, with the same message built with the protobuf API field by field (ids looked
up by name in nic.p4's and fabric.p4's P4Info, values as literal canonical byte
strings, P4Runtime 8.4) and serialised by upb; entries that differ in one value must
give different bytes, and the bytes must not depend on what was encoded before
(remembered values, a cache emptied when full).
"""

from __future__ import annotations

import asyncio

import pytest
from finsy.proto.p4.v1 import p4runtime_pb2 as pb

from controller import wire
from controller.codec import Codec
from fabric.entries import GroupEntry, MemberEntry, TableEntry
from controller.errors import EntryError
from controller.targets import SwitchTarget
from controller.pipeline import pipeline
from controller.reconcile import _check, _fresh_phases, diff_held
from fabric.match import Exact, Lpm, Ternary

EV, SET_PATH = "NicIngress.ev_table", "NicIngress.set_path"
PROFILE, SPRAY, SPRAY_MODE = "NicIngress.spray_selector", "NicIngress.spray", "NicIngress.spray_mode"
DST = 0xFD00_0000_0001_0002 << 64  # fd00:0:1:2::
DST_BYTES = b"\xfd\x00\x00\x00\x00\x01\x00\x02" + b"\x00" * 8
FD00 = b"\xfd" + b"\x00" * 15  # fd00::/16's value


class Ids:
    """Ids by name in one program's P4Info."""

    def __init__(self, program: str) -> None:
        info = pipeline(program).p4info
        self.table = {t.preamble.name: t.preamble.id for t in info.tables}
        self.field = {(t.preamble.name, m.name): m.id for t in info.tables for m in t.match_fields}
        self.action = {a.preamble.name: a.preamble.id for a in info.actions}
        self.param = {(a.preamble.name, p.name): p.id for a in info.actions for p in a.params}
        self.profile = {p.preamble.name: p.preamble.id for p in info.action_profiles}


NIC = Ids("nic")


def fresh(program: str = "nic") -> Codec:
    """A codec of its own (nothing remembered from other tests)."""
    return Codec(pipeline(program).p4info)


def ev_entry(dst: int, plen: int, ev: int, port: int, plane: int, carrier: int) -> TableEntry:
    return TableEntry(EV, (("hdr.ipv6.dst_addr", Lpm(dst, plen)), ("meta.ev", Exact(ev))), SET_PATH,
                      (("port", port), ("plane", plane), ("carrier", carrier)))


def ev_message(dst: bytes, plen: int, ev: bytes, port: bytes, plane: bytes, carrier: bytes) -> pb.Entity:
    ent = pb.Entity()
    te = ent.table_entry
    te.table_id = NIC.table[EV]
    m = te.match.add()
    m.field_id = NIC.field[(EV, "hdr.ipv6.dst_addr")]
    m.lpm.value = dst
    m.lpm.prefix_len = plen
    m = te.match.add()
    m.field_id = NIC.field[(EV, "meta.ev")]
    m.exact.value = ev
    te.action.action.action_id = NIC.action[SET_PATH]
    for name, value in (("port", port), ("plane", plane), ("carrier", carrier)):
        p = te.action.action.params.add()
        p.param_id = NIC.param[(SET_PATH, name)]
        p.value = value
    return ent


def as_update(ent: pb.Entity, kind: int = pb.Update.INSERT) -> bytes:
    """The ``updates`` field of a WriteRequest holding one update of ``ent``, by upb."""
    req = pb.WriteRequest()
    u = req.updates.add()
    u.type = kind
    u.entity.CopyFrom(ent)
    return req.SerializeToString()


def spray_mode(is_mrc: int, mask: int, priority: int) -> tuple[TableEntry, pb.Entity]:
    e = TableEntry(SPRAY_MODE, (("meta.is_mrc", Ternary(is_mrc, mask)),), "NicIngress.spray_per_packet", (), priority)
    ent = pb.Entity()
    te = ent.table_entry
    te.table_id = NIC.table[SPRAY_MODE]
    m = te.match.add()
    m.field_id = NIC.field[(SPRAY_MODE, "meta.is_mrc")]
    m.ternary.value = bytes([is_mrc])
    m.ternary.mask = bytes([mask])
    te.action.action.action_id = NIC.action["NicIngress.spray_per_packet"]
    te.priority = priority
    return e, ent


def group_route(prefix: int, prefix_bytes: bytes, plen: int, group: int) -> tuple[TableEntry, pb.Entity]:
    e = TableEntry(SPRAY, (("hdr.ipv6.dst_addr", Lpm(prefix, plen)),), None, group=group)
    ent = pb.Entity()
    te = ent.table_entry
    te.table_id = NIC.table[SPRAY]
    m = te.match.add()
    m.field_id = NIC.field[(SPRAY, "hdr.ipv6.dst_addr")]
    m.lpm.value = prefix_bytes
    m.lpm.prefix_len = plen
    te.action.action_profile_group_id = group
    return e, ent


def member(mid: int, plane: tuple[int, bytes], spine: tuple[int, bytes]) -> tuple[MemberEntry, pb.Entity]:
    """``plane``, ``spine``: (value, its canonical bytes)."""
    e = MemberEntry(PROFILE, mid, "NicIngress.set_generated", (("plane", plane[0]), ("spine", spine[0])))
    ent = pb.Entity()
    m = ent.action_profile_member
    m.action_profile_id = NIC.profile[PROFILE]
    m.member_id = mid
    m.action.action_id = NIC.action["NicIngress.set_generated"]
    for name, value in (("plane", plane), ("spine", spine)):
        p = m.action.params.add()
        p.param_id = NIC.param[("NicIngress.set_generated", name)]
        p.value = value[1]
    return e, ent


def group(gid: int, members: list[tuple[int, int, tuple[int, bytes]]]) -> tuple[GroupEntry, pb.Entity]:
    """``members``: (member id, weight, (watch port, its canonical bytes))."""
    e = GroupEntry(PROFILE, gid, tuple((mid, weight, watch[0]) for mid, weight, watch in members))
    ent = pb.Entity()
    g = ent.action_profile_group
    g.action_profile_id = NIC.profile[PROFILE]
    g.group_id = gid
    for mid, weight, watch in members:
        m = g.members.add()
        m.member_id = mid
        m.weight = weight
        m.watch_port = watch[1]
    return e, ent


def test_an_ev_entry_is_the_bytes_of_the_message_built_field_by_field() -> None:
    c = fresh()
    e = ev_entry(DST, 64, 0x1003, 2, 1, 0x1_0000)
    want = ev_message(DST_BYTES, 64, b"\x10\x03", b"\x02", b"\x01", b"\x01\x00\x00")
    assert c.update_bytes(e) == as_update(want)
    # The same again (every part now remembered), and then entries that differ in one
    # value each: each is its own message, and none is the first one's bytes.
    assert c.update_bytes(e) == as_update(want)
    others = [
        (ev_entry(DST, 48, 0x1003, 2, 1, 0x1_0000), ev_message(DST_BYTES, 48, b"\x10\x03", b"\x02", b"\x01", b"\x01\x00\x00")),
        (ev_entry(DST, 64, 0x0003, 2, 1, 0x1_0000), ev_message(DST_BYTES, 64, b"\x03", b"\x02", b"\x01", b"\x01\x00\x00")),
        (ev_entry(DST, 64, 0x1003, 511, 1, 0x1_0000), ev_message(DST_BYTES, 64, b"\x10\x03", b"\x01\xff", b"\x01",
                                                                 b"\x01\x00\x00")),
        (ev_entry(DST, 64, 0x1003, 2, 0, 0x1_0000), ev_message(DST_BYTES, 64, b"\x10\x03", b"\x02", b"\x00", b"\x01\x00\x00")),
        (ev_entry(DST, 64, 0x1003, 2, 1, 0), ev_message(DST_BYTES, 64, b"\x10\x03", b"\x02", b"\x01", b"\x00")),
        (ev_entry(DST | 1 << 64, 64, 0x1003, 2, 1, 0x1_0000),
         ev_message(b"\xfd\x00\x00\x00\x00\x01\x00\x03" + b"\x00" * 8, 64, b"\x10\x03", b"\x02", b"\x01", b"\x01\x00\x00")),
    ]
    got = [c.update_bytes(o) for o, _ in others]
    assert got == [as_update(m) for _, m in others]
    assert len(set(got) | {c.update_bytes(e)}) == len(others) + 1


def test_every_kind_of_entry_is_the_bytes_of_its_message() -> None:
    """Ternary with a priority, a group action (id 0 too: it is in a oneof, so
    written), members (id 0: left out, as upb leaves a proto3 zero out) and groups
    (weight 0, watch port 0 and 0x1ff)."""
    c = fresh()
    cases = [spray_mode(1, 1, 10), spray_mode(0, 1, 0), spray_mode(1, 1, (1 << 31) - 1),
             group_route(0xFD00 << 112, FD00, 16, 7), group_route(0xFD00 << 112, FD00, 16, 0),
             group_route(0, b"\0", 1, 1),
             member(257, (1, b"\x01"), (0, b"\0")), member(0, (7, b"\x07"), (255, b"\xff")),
             group(7, [(257, 1, (2, b"\x02")), (1, 3, (0, b"\0"))]), group(0, [(0, 0, (0x1FF, b"\x01\xff"))]),
             group(9, [])]
    for e, ent in cases:
        assert c.update_bytes(e) == as_update(ent), e
        assert pb.Entity.FromString(wire.entity(c.update_bytes(e))) == ent
    assert len({c.update_bytes(e) for e, _ in cases}) == len(cases)


def test_lengths_of_two_and_three_varint_bytes() -> None:
    """A group of 3,000 members is longer than 16,383 bytes (a three-byte length, past
    the table of small varints); its updates field is still upb's."""
    c = fresh()
    e, ent = group(5, [(k, 1, (0x1FF, b"\x01\xff")) for k in range(1, 3001)])
    b = c.update_bytes(e)
    assert len(b) > 16384
    assert b == as_update(ent)
    assert wire.varint(300) == b"\xac\x02" and wire.varint(16384) == b"\x80\x80\x01" and wire.varint(0) == b"\x00"


@pytest.mark.parametrize("kind, code", [("insert", pb.Update.INSERT), ("modify", pb.Update.MODIFY),
                                        ("delete", pb.Update.DELETE)])
def test_a_request_is_its_head_and_its_updates_joined(kind: str, code: int) -> None:
    c = fresh()
    pairs = [(ev_entry(DST, 64, k, 1, 0, k << 16), ev_message(DST_BYTES, 64, bytes([k]), b"\x01", b"\0", bytes([k, 0, 0])))
             for k in range(1, 200)]
    pairs += [spray_mode(1, 1, 10), member(3, (1, b"\x01"), (2, b"\x02")),
              group(4, [(m, 1, (m, bytes([m]))) for m in range(1, 21)])]  # an update longer than 127 bytes
    want = pb.WriteRequest()
    want.device_id = 7
    want.election_id.high = 1
    want.election_id.low = 5
    for _, ent in pairs:
        u = want.updates.add()
        u.type = code
        u.entity.CopyFrom(ent)
    entries = [e for e, _ in pairs]
    assert max(map(len, c.updates_of(entries))) > 130
    body = wire.write_head(7, (1 << 64) | 5) + c.updates(kind, entries)
    assert body == want.SerializeToString()
    assert list(c.write_request(kind, entries).updates) == list(want.updates)
    # And device 0, election id 1: the device id left out, the election id written.
    head = pb.WriteRequest()
    head.election_id.low = 1
    assert wire.write_head(0, 1) == head.SerializeToString()


def test_bytes_do_not_depend_on_what_was_encoded_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same entries, encoded in another order, with shapes mixed, and with every
    remembered value forgotten after each two (CACHE = 2) give the same bytes."""
    entries = [ev_entry(DST | (k % 5) << 64, 64, k % 7, k % 3, k % 8, k % 11) for k in range(60)]
    entries += [spray_mode(k % 2, 1, k)[0] for k in range(1, 5)]
    alone = [fresh().update_bytes(e) for e in entries]  # each with a codec of its own
    assert len(set(alone)) == len(set(entries))
    assert fresh().updates_of(entries) == alone
    assert fresh().updates_of(entries[::-1]) == alone[::-1]
    monkeypatch.setattr(wire, "CACHE", 2)
    assert fresh().updates_of(entries) == alone


def test_an_entry_that_does_not_fit_is_refused_after_fitting_ones_of_its_shape() -> None:
    """The encoders check widths only when a value is first met: a value too wide,
    after entries of the same shape that fit, still gives the one-line error."""
    c = fresh()
    c.updates_of([ev_entry(DST, 64, 1, 2, 1, 0), ev_entry(DST, 64, 2, 2, 1, 0)])
    for bad, message in [(ev_entry(DST, 64, 1, 512, 1, 0), "NicIngress.set_path(port=0x200) does not fit 9 bits"),
                         (ev_entry(DST, 64, 1 << 16, 2, 1, 0), "meta.ev=0x10000 does not fit 16 bits"),
                         (ev_entry(DST, 129, 1, 2, 1, 0), "does not fit 128 bits"),
                         (TableEntry(SPRAY_MODE, (("meta.is_mrc", Ternary(1, 1)),), "NicIngress.spray_per_packet",
                                     (), 1 << 31), "NicIngress.spray_mode: priority 2147483648 is out of range"),
                         (MemberEntry(PROFILE, 1 << 32, "NicIngress.set_generated", (("plane", 0), ("spine", 0))),
                          "NicIngress.spray_selector: member id 4294967296 is out of range"),
                         (TableEntry(SPRAY, (("hdr.ipv6.dst_addr", Lpm(0, 1)),), None, group=-1),
                          "NicIngress.spray: group id -1 is out of range"),
                         (GroupEntry(PROFILE, 1, ((1, 1, -1),)), "group 1: watch port -1 is out of range")]:
        with pytest.raises(EntryError) as err:
            c.updates_of([ev_entry(DST, 64, 3, 2, 1, 0), bad])
        assert message in str(err.value) and "\n" not in str(err.value)


def test_retype_changes_only_the_update_kind() -> None:
    c = fresh()
    e = ev_entry(DST, 64, 0x1003, 2, 1, 0x1_0000)
    ins = c.update_bytes(e)
    ent = ev_message(DST_BYTES, 64, b"\x10\x03", b"\x02", b"\x01", b"\x01\x00\x00")
    assert wire.retype(ins, "insert") == ins
    assert wire.retype(ins, "modify") == as_update(ent, pb.Update.MODIFY)
    assert wire.retype(ins, "delete") == as_update(ent, pb.Update.DELETE) != ins


def port_role(port: int) -> TableEntry:
    return TableEntry("NicIngress.port_role", (("standard_metadata.ingress_port", Exact(port)),),
                      "NicIngress.plane_port", (("plane", 0),))


def test_the_check_counts_entries_per_table_and_refuses_more_than_it_holds() -> None:
    """nic.p4's port_role holds 16 entries (its P4Info says so): the check, which
    counts while it encodes (runs of one action, cut by a member and by another
    action of the same table),
    takes 16 and refuses 17, naming the switch, before anything is written."""
    target = SwitchTarget("nic9", "127.0.0.1:1", 9, "nic")  # never connected: the check does no I/O
    member_ = member(1, (0, b"\0"), (0, b"\0"))[0]
    host = TableEntry("NicIngress.port_role", (("standard_metadata.ingress_port", Exact(100)),),
                      "NicIngress.host_port", (("nic_addr", 1), ("gw_addr", 2), ("gw_mac", 3)))  # another action
    fits = [port_role(p) for p in range(7)] + [member_, host] + [port_role(p) for p in range(8, 16)]
    got = asyncio.run(_check([target], {"nic9": fits}))
    assert len(got["nic9"].updates) == 17
    with pytest.raises(EntryError, match=r"^nic9: 17 entries for NicIngress.port_role, which holds 16; "):
        asyncio.run(_check([target], {"nic9": [*fits, port_role(16)]}))


def test_an_empty_switch_gets_members_then_groups_then_table_entries() -> None:
    """The check's bytes, moved a run at a time into the write order (a group names
    members, a table entry names a group: each must be there before)."""
    c = fresh()
    route, _ = group_route(0xFD00 << 112, FD00, 16, 3)
    m1, _ = member(1, (0, b"\0"), (1, b"\x01"))
    m2, _ = member(2, (1, b"\x01"), (2, b"\x02"))
    g3, _ = group(3, [(1, 1, (1, b"\x01")), (2, 1, (2, b"\x02"))])
    evs = [ev_entry(DST, 64, k, 1, 0, k) for k in range(3)]
    entries = [*evs[:2], route, g3, m1, evs[2], m2]
    enc = asyncio.run(_check([SwitchTarget("nic9", "127.0.0.1:1", 9, "nic")], {"nic9": entries}))["nic9"]
    b = {id(e): c.update_bytes(e) for e in entries}
    assert _fresh_phases(enc) == [("insert", [b[id(m1)], b[id(m2)]]), ("insert", [b[id(g3)]]),
                                  ("insert", [b[id(evs[0])], b[id(evs[1])], b[id(route)], b[id(evs[2])]])]


def reversed_match(ent: pb.Entity) -> pb.Entity:
    """The same table entry with its match fields the other way round: other bytes, the
    same entry (a switch may answer in any field order)."""
    out = pb.Entity()
    out.CopyFrom(ent)
    fields = list(out.table_entry.match)[::-1]
    del out.table_entry.match[:]
    for m in fields:
        out.table_entry.match.add().CopyFrom(m)
    return out


def test_what_a_switch_holds_is_compared_as_bytes_then_as_entries() -> None:
    c = fresh()
    same = [(ev_entry(DST, 64, k, 1, 0, k << 16), ev_message(DST_BYTES, 64, bytes([k]), b"\x01", b"\0", bytes([k, 0, 0])))
            for k in range(1, 6)]
    m1, m1_msg = member(1, (0, b"\0"), (1, b"\x01"))
    wanted = [e for e, _ in same] + [m1]
    updates = c.updates_of(wanted)
    held = [ent.SerializeToString() for _, ent in same] + [m1_msg.SerializeToString()]
    # Everything held as wanted: nothing to write, nothing decoded.
    d, actual = diff_held(c, wanted, updates, held)
    assert (d.insert, d.modify, d.delete, actual) == ([], [], [], [])
    # The same entries in other bytes (match fields reversed): still nothing to write.
    odd = [reversed_match(ent).SerializeToString() for _, ent in same] + [m1_msg.SerializeToString()]
    assert odd[:5] != held[:5]
    d, actual = diff_held(c, wanted, updates, odd)
    assert (d.insert, d.modify, d.delete) == ([], [], []) and len(actual) == 6
    # One entry with other parameters, one the switch lacks, one it has that is not wanted.
    changed = ev_message(DST_BYTES, 64, b"\x02", b"\x01", b"\x01", b"\x02\x00\x00")  # plane 1, not 0
    extra_e, extra = member(9, (1, b"\x01"), (3, b"\x03"))
    held = [same[0][1], changed, same[3][1], same[4][1], m1_msg, extra]  # no EV 3
    d, actual = diff_held(c, wanted, updates, [ent.SerializeToString() for ent in held])
    assert d.insert == [same[2][0]]
    assert d.modify == [(ev_entry(DST, 64, 2, 1, 1, 2 << 16), same[1][0])]
    assert d.delete == [extra_e]
    # A wanted key given twice: the first is what the switch gets (as ``diff`` does).
    twice = [same[0][0], ev_entry(DST, 64, 1, 3, 0, 1 << 16)]
    d, _ = diff_held(c, twice, c.updates_of(twice),
                     [ev_message(DST_BYTES, 64, b"\x01", b"\x03", b"\0", b"\x01\x00\x00").SerializeToString()])
    assert (d.insert, d.modify, d.delete) == ([], [(twice[1], twice[0])], [])


def test_read_responses_split_into_entities_and_entities_into_inserts() -> None:
    resp = pb.ReadResponse()
    ents = [ev_message(DST_BYTES, 64, bytes([k]), b"\x01", b"\0", b"\xff" * (k % 20)) for k in range(1, 40)]
    ents.append(group(4, [(m, 1, (m, bytes([m]))) for m in range(1, 30)])[1])  # longer than 127 bytes
    for ent in ents:
        resp.entities.add().CopyFrom(ent)
    got = wire.entities_of(resp.SerializeToString())
    assert got == [ent.SerializeToString() for ent in ents]
    assert [wire.insert_of(b) for b in got] == [as_update(ent) for ent in ents]
    assert wire.entities_of(b"") == []
