"""Whole-table reads answer from encodings kept with the entries (p4target.p4runtime.wire).

Why: a wildcard Read concatenates per-entry bytes instead of building messages, so it
must give exactly the canonical entries the message path gives (shortest bytestrings,
ids in order, wildcards left out, is_const), for every match kind, and must never
serve an encoding that outlived its entry (MODIFY, DELETE, entries added behind the
server's back). The expected entries are written out here from the request values.
"""

from __future__ import annotations

from finsy.proto.p4.v1 import p4runtime_pb2 as pb

from tests.p4runtime.p4rt_client import entity, ins

FM = pb.FieldMatch


def _table_read(client, table_id: int = 0, **fields) -> list[pb.TableEntry]:
    return [e.table_entry for e in client.read(entity(table_entry=pb.TableEntry(table_id=table_id, **fields)))]


def _one_read(client, e: pb.TableEntry) -> list[pb.TableEntry]:
    """The message path: a read naming the entry by its match (and priority)."""
    probe = pb.TableEntry(table_id=e.table_id, priority=e.priority)
    probe.match.extend(e.match)
    return _table_read(client, e.table_id, match=probe.match, priority=probe.priority)


def _act(action_id: int, *params: tuple[int, bytes]) -> pb.TableAction:
    return pb.TableAction(action=pb.Action(action_id=action_id, params=[
        pb.Action.Param(param_id=pid, value=v) for pid, v in params]))


def test_whole_table_reads_give_the_canonical_entries_of_every_match_kind(client, names) -> None:
    exact_id, lpm_id, acl_id, const_id = (names.table_id(t) for t in ("exact_t", "lpm_t", "acl_t", "const_t"))
    fwd, lpm_hit, set_out = names.action_id("fwd"), names.action_id("lpm_hit"), names.action_id("set_out")
    f = lambda table, field: names.field_id(table, field)  # noqa: E731

    # sent with padded bytestrings, ids out of order where there are several
    exact = pb.TableEntry(table_id=exact_id, match=[FM(field_id=f("exact_t", "hdr.eth.dst_addr"),
                                                        exact=FM.Exact(value=b"\x00\x00\x0a\x00\x00\x00\x00\x05"))],
                          action=_act(fwd, (1, b"\x00\x03")))
    lpm = pb.TableEntry(table_id=lpm_id, match=[FM(field_id=f("lpm_t", "hdr.t.key32"),
                                                    lpm=FM.LPM(value=b"\x00\xab\x00\x00", prefix_len=16))],
                        action=_act(lpm_hit, (1, b"\x00\x00")))
    acl_full = pb.TableEntry(table_id=acl_id, priority=10, match=[
        FM(field_id=f("acl_t", "hdr.eth.ether_type"), optional=FM.Optional(value=b"\x88\xb5")),
        FM(field_id=f("acl_t", "hdr.t.k8"), range=FM.Range(low=b"\x01", high=b"\x00\x05")),
        FM(field_id=f("acl_t", "hdr.t.k16"), ternary=FM.Ternary(value=b"\x01\x00", mask=b"\xff\x00")),
    ], action=_act(set_out, (1, b"\x12\x34")))
    acl_range = pb.TableEntry(table_id=acl_id, priority=20, match=[
        FM(field_id=f("acl_t", "hdr.t.k8"), range=FM.Range(low=b"\x02", high=b"\x03"))],
        action=_act(set_out, (1, b"\x00\x07")))
    client.write(ins(exact), ins(lpm), ins(acl_full), ins(acl_range))

    expected = {
        exact_id: [pb.TableEntry(table_id=exact_id, match=[FM(field_id=1, exact=FM.Exact(value=b"\x0a\x00\x00\x00\x00\x05"))],
                                 action=_act(fwd, (1, b"\x03")))],
        lpm_id: [pb.TableEntry(table_id=lpm_id, match=[FM(field_id=1, lpm=FM.LPM(value=b"\xab\x00\x00", prefix_len=16))],
                               action=_act(lpm_hit, (1, b"\x00")))],
        acl_id: [  # match order: the higher priority first
            pb.TableEntry(table_id=acl_id, priority=20, match=[FM(field_id=2, range=FM.Range(low=b"\x02", high=b"\x03"))],
                          action=_act(set_out, (1, b"\x07"))),
            pb.TableEntry(table_id=acl_id, priority=10, match=[
                FM(field_id=1, ternary=FM.Ternary(value=b"\x01\x00", mask=b"\xff\x00")),
                FM(field_id=2, range=FM.Range(low=b"\x01", high=b"\x05")),
                FM(field_id=3, optional=FM.Optional(value=b"\x88\xb5"))], action=_act(set_out, (1, b"\x12\x34")))],
        const_id: [pb.TableEntry(table_id=const_id, match=[FM(field_id=1, exact=FM.Exact(value=b"\x77"))],
                                 action=_act(set_out, (1, b"\x77\x77")), is_const=True)],
    }
    assert [f("acl_t", n) for n in ("hdr.t.k16", "hdr.t.k8", "hdr.eth.ether_type")] == [1, 2, 3]
    for _ in range(2):  # the first read encodes and keeps, the second serves what was kept
        everything = _table_read(client)
        for tid, want in expected.items():
            assert [e for e in everything if e.table_id == tid] == want
            assert _table_read(client, tid) == want
            for e in want:  # the message path agrees, entry by entry
                assert _one_read(client, e) == [e]
    assert everything.count(expected[exact_id][0]) == 1 and exact != expected[exact_id][0]  # canonical, not as sent


def test_kept_encodings_follow_modify_delete_and_entries_added_behind_the_server(client, names, rig) -> None:
    exact_id, fwd, drop = names.table_id("exact_t"), names.action_id("fwd"), names.action_id("drop")
    a = names.entry("exact_t", {"hdr.eth.dst_addr": 0x0A0000000001}, "fwd", port=1)
    b = names.entry("exact_t", {"hdr.eth.dst_addr": 0x0A0000000002}, "fwd", port=2)
    client.write(ins(a), ins(b))
    assert [e.action.action.params[0].value for e in _table_read(client, exact_id)] == [b"\x01", b"\x02"]

    moved = names.entry("exact_t", {"hdr.eth.dst_addr": 0x0A0000000001}, "drop")
    client.write(ins(moved, "MODIFY"), ins(b, "DELETE"))
    got = _table_read(client, exact_id)
    assert [(e.match[0].exact.value, e.action.action.action_id, len(e.action.action.params)) for e in got] == [
        (b"\x0a\x00\x00\x00\x00\x01", drop, 0)]
    assert drop != fwd

    sw = rig.device.switch
    schema = rig.server.state.schema
    sw.table_add(schema.tables[exact_id].name, {"hdr.eth.dst_addr": 0x0A00000000FF}, schema.actions[fwd].name,
                 {"port": 9})
    got = _table_read(client, exact_id)
    behind = pb.TableEntry(table_id=exact_id, match=[FM(field_id=1, exact=FM.Exact(value=b"\x0a\x00\x00\x00\x00\xff"))],
                           action=_act(fwd, (1, b"\x09")))
    assert got[1:] == [behind] and _one_read(client, behind) == [behind]
