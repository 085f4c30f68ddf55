"""The embedded target's P4Info against p4c's (p4c-bm2-ss), field by field, for both programs.

Why: the controller encodes every entry with a P4Info; a switch of either target must
accept the same entries, so the two compilers must agree on every id, name, match
field, action, parameter, action profile, counter and register. Each section is
compared entity by entity (keyed by name), every field of each.

One difference is known and asserted as exactly that: an action that no table uses and
the program calls directly with constant arguments (``drop(reason)``) keeps its
parameters in p4target's P4Info, while p4c removes them (it binds the arguments at the
call sites). The controller never writes such an action, so entries are unaffected.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

pytestmark = pytest.mark.bmv2

SECTIONS = ("tables", "actions", "actionProfiles", "counters", "directCounters", "meters", "directMeters",
            "registers", "controllerPacketMetadata", "digests", "valueSets", "externs")


def _p4info(program: str, target: str) -> dict[str, Any]:
    from controller.pipeline import pipeline

    return json_format.MessageToDict(pipeline(program, target).p4info)


def _by_name(section: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["preamble"]["name"]: e for e in section}


def _differences(ours: dict[str, Any], p4c: dict[str, Any]) -> list[str]:
    out = []
    for sec in SECTIONS:
        a, b = _by_name(ours.get(sec, [])), _by_name(p4c.get(sec, []))
        if sorted(a) != sorted(b):
            out.append(f"{sec}: names {sorted(set(a) ^ set(b))} in one only")
        for name in sorted(set(a) & set(b)):
            for field in sorted(set(a[name]) | set(b[name])):
                if a[name].get(field) != b[name].get(field):
                    out.append(f"{sec} {name} {field}: {a[name].get(field)} != {b[name].get(field)}")
    return out


@pytest.mark.parametrize("program", ["fabric", "nic"])
def test_p4info_agrees_with_p4c_field_by_field(program: str) -> None:
    ours, p4c = _p4info(program, "embedded"), _p4info(program, "bmv2")
    assert ours["tables"] and ours["actions"] and ours["counters"], "both P4Infos have content"
    table_actions = {ref["id"] for t in ours["tables"] for ref in t.get("actionRefs", [])}
    diffs = _differences(ours, p4c)
    known = []
    for d in diffs:
        sec, name, field = d.split(" ", 3)[:3]
        action = _by_name(ours["actions"]).get(name)
        if sec == "actions" and field == "params:" and action and action["preamble"]["id"] not in table_actions \
                and "params" not in _by_name(p4c["actions"])[name]:
            known.append(name)
    assert [d for d in diffs if d.split(" ", 2)[1] not in known] == [], diffs
    # the known difference, written out
    assert sorted(known) == {"fabric": ["FabricIngress.drop"],
                             "nic": ["NicIngress.drop_with", "NicIngress.encap_outer"]}[program]


def test_a_different_program_is_caught(tmp_path: Any) -> None:
    """The comparison finds a change of one match field's width."""
    ours, p4c = _p4info("fabric", "embedded"), _p4info("fabric", "bmv2")
    t = next(t for t in p4c["tables"] if t["preamble"]["name"] == "FabricEgress.port_mac")
    t["matchFields"][0]["bitwidth"] = 16
    diffs = _differences(ours, p4c)
    assert any(d.startswith("tables FabricEgress.port_mac matchFields:") for d in diffs), diffs
