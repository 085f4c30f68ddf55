"""Selector groups on a target whose P4Runtime server cannot report or modify them
fully (BMv2's PI: every member read back with the last member's watch port; a MODIFY
that changes a group's members fails), on entries written out by hand.

Why: a second install must write nothing although the groups read back differ from
what was written, and a changed group must reach the switch as delete + insert
without ever deleting a group that a table entry still points at. The codec is
that of nic.p4's real P4Info, told the target; the phases are compared literally.
"""

from __future__ import annotations

from controller.codec import Codec
from fabric.entries import GroupEntry, MemberEntry, TableEntry
from controller.pipeline import pipeline
from controller.reconcile import diff, remake_groups, steps
from fabric.match import Exact, Lpm

PROFILE, SPRAY = "NicIngress.spray_selector", "NicIngress.spray"


def member(mid: int, spine: int) -> MemberEntry:
    return MemberEntry(PROFILE, mid, "NicIngress.set_generated", (("plane", 0), ("spine", spine)))


def route(prefix: int, group: int) -> TableEntry:
    return TableEntry(SPRAY, (("hdr.ipv6.dst_addr", Lpm(prefix << 112, 16)),), None, group=group)


def port(n: int, plane: int) -> TableEntry:
    return TableEntry("NicIngress.port_role", (("standard_metadata.ingress_port", Exact(n)),),
                      "NicIngress.plane_port", (("plane", plane),))


def codecs() -> tuple[Codec, Codec]:
    p4info = pipeline("nic").p4info
    return Codec(p4info, "embedded"), Codec(p4info, "bmv2")


WANT_G1 = GroupEntry(PROFILE, 1, ((1, 1, 1), (2, 1, 2)))
READ_G1 = GroupEntry(PROFILE, 1, ((1, 1, 2), (2, 1, 2)))  # as PI reads it back: the last member's watch port


def test_groups_read_back_without_their_watch_ports_compare_equal_on_bmv2_only() -> None:
    emb, bm = codecs()
    wanted = [member(1, 0), member(2, 1), WANT_G1, route(0xFD00, 1)]
    actual = [member(1, 0), member(2, 1), READ_G1, route(0xFD00, 1)]
    assert len(diff(wanted, actual, bm.comparable)) == 0
    d = diff(wanted, actual, emb.comparable)
    assert (d.insert, d.modify, d.delete) == ([], [(READ_G1, WANT_G1)], [])
    # a change of members or weights is still a change on BMv2
    fewer = GroupEntry(PROFILE, 1, ((1, 1, 1),))
    heavier = GroupEntry(PROFILE, 1, ((1, 2, 1), (2, 1, 2)))
    for g in (fewer, heavier):
        assert diff([*wanted[:2], g, wanted[3]], actual, bm.comparable).modify == [(READ_G1, g)]


def test_a_changed_group_is_deleted_and_inserted_again_with_the_entries_pointing_at_it() -> None:
    emb, bm = codecs()
    new_g1 = GroupEntry(PROFILE, 1, ((1, 1, 1),))
    g2 = GroupEntry(PROFILE, 2, ((2, 1, 2),))
    actual = [member(1, 0), member(2, 1), READ_G1, g2, route(0xFD00, 1), route(0xFE00, 1), route(0xFC00, 2),
              route(0xFB00, 1), port(1, 0)]
    # 0xFD00 unchanged, 0xFE00 moved to group 2, 0xFB00 no longer wanted, 0xFA00 new on group 1
    wanted = [member(1, 0), member(2, 1), new_g1, g2, route(0xFD00, 1), route(0xFE00, 2), route(0xFC00, 2),
              route(0xFA00, 1), port(1, 1)]
    d = diff(wanted, actual, bm.comparable)
    first, rest = remake_groups(bm, d, wanted, actual)
    assert first == [("delete", [route(0xFD00, 1), route(0xFE00, 1), route(0xFB00, 1)]), ("delete", [READ_G1])]
    assert steps(rest) == [
        ("insert", [new_g1]),
        ("insert", [route(0xFA00, 1), route(0xFD00, 1), route(0xFE00, 2)]),
        ("modify", [port(1, 1)]),
    ]
    # a target that modifies groups gets the diff as it was
    d = diff(wanted, actual, emb.comparable)
    assert remake_groups(emb, d, wanted, actual) == ([], d)
    assert ("modify", [new_g1]) in steps(d)
