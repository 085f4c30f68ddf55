"""The reconciler's diff and its write order, on entries written out by hand.

Why: a switch must never hold a reference to something not written yet (a table
entry naming a group, a group naming a member), and removals go the other way; and
only what differs is written. controller/reconcile.py's ``diff`` and ``steps`` are
pure, so the phases are compared here with the expected ones, literally.
"""

from __future__ import annotations

from fabric.entries import GroupEntry, MemberEntry, TableEntry
from controller.reconcile import diff, steps
from fabric.match import Exact, Lpm

PROFILE, SPRAY = "NicIngress.spray_selector", "NicIngress.spray"


def member(mid: int, spine: int) -> MemberEntry:
    return MemberEntry(PROFILE, mid, "NicIngress.set_generated", (("plane", 0), ("spine", spine)))


def route(prefix: int, group: int) -> TableEntry:
    return TableEntry(SPRAY, (("hdr.ipv6.dst_addr", Lpm(prefix << 112, 16)),), None, group=group)


def port(n: int, plane: int) -> TableEntry:
    return TableEntry("NicIngress.port_role", (("standard_metadata.ingress_port", Exact(n)),),
                      "NicIngress.plane_port", (("plane", plane),))


def test_only_differences_are_written_members_first_and_removals_last() -> None:
    wanted = [port(1, 0), route(0xFD00, 2), GroupEntry(PROFILE, 2, ((1, 1, 1), (2, 1, 2))), member(1, 0),
              member(2, 1), port(2, 1), port(3, 2), port(1, 0)]  # the last: a repeat, written once
    actual = [port(1, 0), member(2, 5), GroupEntry(PROFILE, 9, ((2, 1, 2),)), route(0xFE00, 9), member(7, 7),
              port(2, 0)]
    d = diff(wanted, actual)
    assert (d.insert, d.modify, d.delete) == (
        [route(0xFD00, 2), GroupEntry(PROFILE, 2, ((1, 1, 1), (2, 1, 2))), member(1, 0), port(3, 2)],
        [(member(2, 5), member(2, 1)), (port(2, 0), port(2, 1))],
        [GroupEntry(PROFILE, 9, ((2, 1, 2),)), route(0xFE00, 9), member(7, 7)])
    assert len(d) == 9
    assert steps(d) == [
        ("insert", [member(1, 0)]),
        ("modify", [member(2, 1)]),
        ("insert", [GroupEntry(PROFILE, 2, ((1, 1, 1), (2, 1, 2)))]),
        ("insert", [route(0xFD00, 2), port(3, 2)]),
        ("modify", [port(2, 1)]),
        ("delete", [route(0xFE00, 9)]),
        ("delete", [GroupEntry(PROFILE, 9, ((2, 1, 2),))]),
        ("delete", [member(7, 7)]),
    ]
    assert len(diff(wanted, wanted)) == 0 and steps(diff(wanted, wanted)) == []
