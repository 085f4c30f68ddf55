"""The controller's codec: entries to P4Runtime messages, written out by hand.

Why: controller/codec.py's Codec fills a reusable message per entry shape (table,
action, field and parameter names) and copies it into the request, so an entry
could pick up a value left over from the one before (a priority, a group id, a
field of another order). Here every update of a request that mixes shapes and
reuses them is compared with the message P4Runtime defines for it, written out
with literal canonical byte strings (shortest big-endian, P4Runtime 8.4); ids are
looked up by name in nic.p4's P4Info, the codec's input. The checks that stop an
install before its first write are exercised with the one-line errors they give.
"""

from __future__ import annotations

import pytest
from finsy.proto.p4.v1 import p4runtime_pb2
from google.protobuf import text_format

from controller.codec import codec
from fabric.entries import GroupEntry, MemberEntry, TableEntry
from controller.errors import EntryError
from controller.pipeline import pipeline
from fabric.match import Exact, Lpm, Ternary

EV, SPRAY, SPRAY_MODE = "NicIngress.ev_table", "NicIngress.spray", "NicIngress.spray_mode"
SET_PATH, PROFILE = "NicIngress.set_path", "NicIngress.spray_selector"
DST = 0xFD00_0000_0001_0002 << 64  # fd00:0:1:2::


def ids() -> dict[str, int]:
    """Table, action, profile ids, and "table/field" / "action/param" ids, by name."""
    info = pipeline("nic").p4info
    out = {t.preamble.name: t.preamble.id for t in info.tables}
    out |= {f"{t.preamble.name}/{m.name}": m.id for t in info.tables for m in t.match_fields}
    out |= {a.preamble.name: a.preamble.id for a in info.actions}
    out |= {f"{a.preamble.name}/{p.name}": p.id for a in info.actions for p in a.params}
    out |= {p.preamble.name: p.preamble.id for p in info.action_profiles}
    return out


def ev(dst: int, plen: int, ev_id: int, port: int, plane: int, carrier: int, *, reverse: bool = False) -> TableEntry:
    match = (("hdr.ipv6.dst_addr", Lpm(dst, plen)), ("meta.ev", Exact(ev_id)))
    return TableEntry(EV, match[::-1] if reverse else match, SET_PATH,
                      (("port", port), ("plane", plane), ("carrier", carrier)))


def updates(text: str) -> list[p4runtime_pb2.Update]:
    i = ids()
    req = text_format.Parse(text % {k.replace("/", ":"): v for k, v in i.items()}, p4runtime_pb2.WriteRequest())
    return list(req.updates)


def test_a_request_mixing_and_reusing_shapes_is_every_entry_as_written_out() -> None:
    entries = [
        ev(DST, 64, 0x1003, 2, 1, 0x1_0000),
        ev(DST, 64, 0x1004, 3, 2, 0, reverse=True),  # same table and action, fields in the other order
        TableEntry(SPRAY_MODE, (("meta.is_mrc", Ternary(1, 1)),), "NicIngress.spray_per_packet", (), 10),
        TableEntry(SPRAY, (("hdr.ipv6.dst_addr", Lpm(0xFD00 << 112, 16)),), None, group=7),
        ev(0xFD << 120, 8, 0, 0, 0, 0xFF),  # the first shape again: every value replaced
        TableEntry(SPRAY_MODE, (("meta.is_mrc", Ternary(0, 1)),), "NicIngress.spray_per_packet"),  # no priority
        MemberEntry(PROFILE, 257, "NicIngress.set_generated", (("plane", 1), ("spine", 0))),
        GroupEntry(PROFILE, 7, ((257, 1, 2), (1, 3, 0))),
        GroupEntry(PROFILE, 8, ((2, 1, 511),)),  # fewer members than the group before
        MemberEntry(PROFILE, 1, "NicIngress.set_generated", (("plane", 0), ("spine", 255))),
        TableEntry(EV, ev(DST, 64, 5, 0, 0, 0).match, SET_PATH, (("carrier", 4), ("port", 5), ("plane", 6))),
    ]
    # The first shape once more, sharing a match value and two parameters with its last use.
    entries.append(TableEntry(EV, (entries[4].match[0], ("meta.ev", Exact(0x1005))), SET_PATH,
                              (("port", 0), ("plane", 3), ("carrier", 0xFF))))
    want = updates(r"""
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.ev_table)d
      match { field_id: %(NicIngress.ev_table:hdr.ipv6.dst_addr)d
              lpm { value: "\xfd\x00\x00\x00\x00\x01\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00" prefix_len: 64 } }
      match { field_id: %(NicIngress.ev_table:meta.ev)d exact { value: "\x10\x03" } }
      action { action { action_id: %(NicIngress.set_path)d
        params { param_id: %(NicIngress.set_path:port)d value: "\x02" }
        params { param_id: %(NicIngress.set_path:plane)d value: "\x01" }
        params { param_id: %(NicIngress.set_path:carrier)d value: "\x01\x00\x00" } } } } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.ev_table)d
      match { field_id: %(NicIngress.ev_table:meta.ev)d exact { value: "\x10\x04" } }
      match { field_id: %(NicIngress.ev_table:hdr.ipv6.dst_addr)d
              lpm { value: "\xfd\x00\x00\x00\x00\x01\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00" prefix_len: 64 } }
      action { action { action_id: %(NicIngress.set_path)d
        params { param_id: %(NicIngress.set_path:port)d value: "\x03" }
        params { param_id: %(NicIngress.set_path:plane)d value: "\x02" }
        params { param_id: %(NicIngress.set_path:carrier)d value: "\x00" } } } } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.spray_mode)d
      match { field_id: %(NicIngress.spray_mode:meta.is_mrc)d ternary { value: "\x01" mask: "\x01" } }
      action { action { action_id: %(NicIngress.spray_per_packet)d } } priority: 10 } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.spray)d
      match { field_id: %(NicIngress.spray:hdr.ipv6.dst_addr)d
              lpm { value: "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" prefix_len: 16 } }
      action { action_profile_group_id: 7 } } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.ev_table)d
      match { field_id: %(NicIngress.ev_table:hdr.ipv6.dst_addr)d
              lpm { value: "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" prefix_len: 8 } }
      match { field_id: %(NicIngress.ev_table:meta.ev)d exact { value: "\x00" } }
      action { action { action_id: %(NicIngress.set_path)d
        params { param_id: %(NicIngress.set_path:port)d value: "\x00" }
        params { param_id: %(NicIngress.set_path:plane)d value: "\x00" }
        params { param_id: %(NicIngress.set_path:carrier)d value: "\xff" } } } } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.spray_mode)d
      match { field_id: %(NicIngress.spray_mode:meta.is_mrc)d ternary { value: "\x00" mask: "\x01" } }
      action { action { action_id: %(NicIngress.spray_per_packet)d } } } } }
    updates { type: INSERT entity { action_profile_member {
      action_profile_id: %(NicIngress.spray_selector)d member_id: 257
      action { action_id: %(NicIngress.set_generated)d
        params { param_id: %(NicIngress.set_generated:plane)d value: "\x01" }
        params { param_id: %(NicIngress.set_generated:spine)d value: "\x00" } } } } }
    updates { type: INSERT entity { action_profile_group {
      action_profile_id: %(NicIngress.spray_selector)d group_id: 7
      members { member_id: 257 weight: 1 watch_port: "\x02" }
      members { member_id: 1 weight: 3 watch_port: "\x00" } } } }
    updates { type: INSERT entity { action_profile_group {
      action_profile_id: %(NicIngress.spray_selector)d group_id: 8
      members { member_id: 2 weight: 1 watch_port: "\x01\xff" } } } }
    updates { type: INSERT entity { action_profile_member {
      action_profile_id: %(NicIngress.spray_selector)d member_id: 1
      action { action_id: %(NicIngress.set_generated)d
        params { param_id: %(NicIngress.set_generated:plane)d value: "\x00" }
        params { param_id: %(NicIngress.set_generated:spine)d value: "\xff" } } } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.ev_table)d
      match { field_id: %(NicIngress.ev_table:hdr.ipv6.dst_addr)d
              lpm { value: "\xfd\x00\x00\x00\x00\x01\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00" prefix_len: 64 } }
      match { field_id: %(NicIngress.ev_table:meta.ev)d exact { value: "\x05" } }
      action { action { action_id: %(NicIngress.set_path)d
        params { param_id: %(NicIngress.set_path:carrier)d value: "\x04" }
        params { param_id: %(NicIngress.set_path:port)d value: "\x05" }
        params { param_id: %(NicIngress.set_path:plane)d value: "\x06" } } } } } }
    updates { type: INSERT entity { table_entry { table_id: %(NicIngress.ev_table)d
      match { field_id: %(NicIngress.ev_table:hdr.ipv6.dst_addr)d
              lpm { value: "\xfd\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" prefix_len: 8 } }
      match { field_id: %(NicIngress.ev_table:meta.ev)d exact { value: "\x10\x05" } }
      action { action { action_id: %(NicIngress.set_path)d
        params { param_id: %(NicIngress.set_path:port)d value: "\x00" }
        params { param_id: %(NicIngress.set_path:plane)d value: "\x03" }
        params { param_id: %(NicIngress.set_path:carrier)d value: "\xff" } } } } } }
    """)
    c = codec("nic")
    for e in entries:
        c.check(e)
    got = list(c.write_request("insert", entries).updates)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=False)):
        assert g == w, f"update {k}:\n{g}\nwanted:\n{w}"
    # One entry alone is the same entity; and the kinds of update are the asked ones.
    assert c.encode(entries[4]) == want[4].entity
    assert [u.type for u in c.write_request("delete", entries[:2]).updates] == [p4runtime_pb2.Update.DELETE] * 2
    assert [u.type for u in c.write_request("modify", entries[:1]).updates] == [p4runtime_pb2.Update.MODIFY]
    # What a switch reads back decodes to the entries (match fields in P4Info order).
    assert c.decode(want[1].entity) == ev(DST, 64, 0x1004, 3, 2, 0)
    assert [c.decode(u.entity) for u in want[2:-2]] == entries[2:-2]


@pytest.mark.parametrize("entry, message", [
    (ev(1 << 128, 64, 1, 2, 1, 0), "NicIngress.ev_table: hdr.ipv6.dst_addr 0x100000000000000000000000000000000/64 "
                                   "does not fit 128 bits"),
    (ev(DST, 129, 1, 2, 1, 0), "does not fit 128 bits"),
    (ev(DST, 0, 1, 2, 1, 0), "does not fit 128 bits"),
    (ev(DST, 64, 1 << 16, 2, 1, 0), "NicIngress.ev_table: meta.ev=0x10000 does not fit 16 bits"),
    (ev(DST, 64, -1, 2, 1, 0), "meta.ev=-0x1 does not fit 16 bits"),
    (ev(DST, 64, 1, 512, 1, 0), "NicIngress.ev_table: NicIngress.set_path(port=0x200) does not fit 9 bits"),
    (ev(DST, 64, 1, 2, 8, 0), "set_path(plane=0x8) does not fit 3 bits"),
    (TableEntry(EV, (("hdr.ipv6.dst_addr", Exact(DST)), ("meta.ev", Exact(1))), SET_PATH,
                (("port", 1), ("plane", 0), ("carrier", 0))), "hdr.ipv6.dst_addr is lpm, not Exact"),
    (TableEntry(EV, (("hdr.ipv6.src_addr", Lpm(DST, 64)),), SET_PATH, ()), "no match field 'hdr.ipv6.src_addr'"),
    (TableEntry(EV, (("meta.ev", Exact(1)),), SET_PATH, (("port", 1),)), "action NicIngress.set_path takes port, "
                                                                         "plane, carrier"),
    (TableEntry(EV, (("meta.ev", Exact(1)),), SET_PATH, (("port", 1), ("plane", 0), ("color", 0))),
     "action NicIngress.set_path has no parameter 'color'"),
    (TableEntry("NicIngress.nope", (), "NoAction"), "no table 'NicIngress.nope' in the P4Info"),
    (TableEntry(EV, (), "NicIngress.nope"), "no action 'NicIngress.nope' in the P4Info"),
    (TableEntry(SPRAY, (), None), "NicIngress.spray: an entry needs an action or a group"),
    (TableEntry(SPRAY_MODE, (("meta.is_mrc", Ternary(2, 1)),), "NicIngress.spray_per_packet", (), 1),
     "meta.is_mrc 0x2 &&& 0x1 is not a 1-bit ternary"),
    (TableEntry(SPRAY_MODE, (("meta.is_mrc", Ternary(1, 3)),), "NicIngress.spray_per_packet", (), 1),
     "meta.is_mrc 0x1 &&& 0x3 is not a 1-bit ternary"),
    (MemberEntry(PROFILE, 1, "NicIngress.set_generated", (("plane", 0), ("spine", 256))),
     "NicIngress.spray_selector: NicIngress.set_generated(spine=0x100) does not fit 8 bits"),
    (MemberEntry("NicIngress.nope", 1, "NicIngress.set_generated", ()), "no action profile 'NicIngress.nope'"),
    (GroupEntry("NicIngress.nope", 1, ()), "no action profile 'NicIngress.nope'"),
])
def test_check_refuses_what_does_not_fit_the_p4info(entry, message: str) -> None:
    c = codec("nic")
    c.check(ev(DST, 64, 1, 2, 1, 0))  # a fitting entry of the same shape first: its shape is known
    with pytest.raises(EntryError) as err:
        c.check(entry)
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    c.check(ev(DST, 64, 0xFFFF, 511, 7, (1 << 128) - 1))  # the widest values fit
