"""Action profiles and selectors constructed in a table's ``implementation`` property,
named as p4c names them (the property's @name, not prefixed by the control).

Expectations by hand: an ether type entry of ``by_type`` forwards through its member;
otherwise ``spread`` picks a member of the group by the identity hash of the source's
low byte (the flow) modulo the group's two members.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target import Switch
from p4target.compiler import compile_file
from p4target.runtime.entries import Exact, Group, Member

PROG = Path(__file__).parent / "p4" / "inline_profiles.p4"


def frame(ether_type: int, dst_low: int, flow: int) -> bytes:
    return bytes(5) + bytes([dst_low]) + bytes(5) + bytes([flow]) + ether_type.to_bytes(2, "big") + b"data"


def test_instances_are_named_as_p4c_names_them() -> None:
    model = compile_file(PROG).model
    assert {(e.kind, e.name, e.tables) for e in model.externs} == {
        ("action_profile", "type_prof", ("MyIngress.by_type",)),
        ("action_selector", "spread_sel", ("MyIngress.spread",))}
    assert {t.name: t.implementation for t in model.tables} == {
        "MyIngress.by_type": "type_prof", "MyIngress.spread": "spread_sel"}


def test_members_and_groups_forward() -> None:
    sw = Switch.load(PROG)
    sw.act_prof_add_member("type_prof", 1, "MyIngress.forward", {"port": 4})
    sw.table_add("MyIngress.by_type", {"hdr.eth.ether_type": Exact(0x0800)}, Member(1))
    for mid, port in ((1, 6), (2, 7)):
        sw.act_prof_add_member("spread_sel", mid, "MyIngress.forward", {"port": port})
    sw.act_prof_add_group("spread_sel", 9, [1, 2])
    sw.table_add("MyIngress.spread", {"dst_low": Exact(5)}, Group(9))
    assert sw.inject(1, frame(0x0800, 5, 1)) == [(4, frame(0x0800, 5, 1))]
    ports = {flow: sw.inject(1, frame(0x86dd, 5, flow))[0][0] for flow in range(8)}
    assert set(ports.values()) == {6, 7}  # both members used
    assert all(ports[f] == ports[f + 2] for f in range(6))  # the flow decides, two members


@pytest.mark.bmv2
def test_p4c_gives_the_same_names(p4c_names) -> None:
    theirs, ours = p4c_names(PROG)
    assert theirs["action_profiles"] == ["spread_sel", "type_prof"]
    assert ours == theirs
