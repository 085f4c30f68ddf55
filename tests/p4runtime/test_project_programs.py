"""The project's own programs (p4src/*.p4) get a P4Info and go through the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.device_config import device_config_from_file, load_device_config
from p4target.p4info import build_p4info, parse_p4info_text, p4info_text
from tests.p4runtime.p4rt_client import RawClient

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
PROGRAMS = sorted(P4SRC.glob("*.p4"))


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_p4info_and_pipeline_push(program: Path, rig) -> None:
    config = device_config_from_file(program)
    info = build_p4info(load_device_config(config).model)
    assert info.tables, f"{program.name} has tables"
    objs = [*info.tables, *info.actions, *info.action_profiles, *info.counters, *info.direct_counters,
            *info.meters, *info.direct_meters, *info.registers, *info.digests, *info.controller_packet_metadata]
    ids = [o.preamble.id for o in objs]
    assert len(ids) == len(set(ids)), "P4Runtime ids are unique"
    aliases = [o.preamble.alias for o in objs]
    assert len(aliases) == len(set(aliases)), "aliases are unique"
    assert parse_p4info_text(p4info_text(load_device_config(config).model)) == info
    c = RawClient(rig.server.bound_port, device_id=1)
    try:
        c.arbitrate(1)
        c.set_pipeline(info, config)
        assert c.get_pipeline("P4INFO_AND_COOKIE").p4info == info
    finally:
        c.close()


# fabric.p4's tables, actions and counters as its source declares them (p4src/fabric.p4,
# typedefs in p4src/include/headers.p4: port_t bit<9>, mac_addr_t bit<48>; PORTS 512,
# DROP_REASONS 16), written out here rather than taken from the compiler
EXACT, LPM, TERNARY = 2, 3, 4  # p4.config.v1.MatchField.MatchType
PORT_DMAC = [("port", 9), ("dmac", 48)]
FABRIC_TABLES = {
    "FabricIngress.dscp_priority": (64, [("hdr.ipv6.traffic_class", 8, TERNARY)],
                                    ["FabricIngress.set_priority", "NoAction"]),
    "FabricIngress.my_sid": (1024, [("hdr.ipv6.dst_addr", 128, LPM)],
                             ["FabricIngress.usid_un", "FabricIngress.usid_un_psp", "FabricIngress.srv6_end",
                              "FabricIngress.srv6_end_psp", "FabricIngress.srv6_end_x",
                              "FabricIngress.srv6_end_x_psp", "NoAction"]),
    "FabricIngress.usid_fwd": (8192, [("hdr.ipv6.dst_addr", 128, LPM)],
                               ["FabricIngress.fwd", "FabricIngress.usid_ua", "NoAction"]),
    "FabricIngress.ipv6_route": (4096, [("hdr.ipv6.dst_addr", 128, LPM)], ["FabricIngress.fwd", "NoAction"]),
    "FabricEgress.port_mac": (512, [("standard_metadata.egress_port", 9, EXACT)],
                              ["FabricEgress.set_src_mac", "NoAction"]),
    "FabricEgress.trim_config": (512, [("standard_metadata.egress_port", 9, EXACT)],
                                 ["FabricEgress.set_trim", "NoAction"]),
    "FabricEgress.trim_class": (64, [("hdr.ipv6.traffic_class", 8, TERNARY)],
                                ["FabricEgress.set_trimmable", "NoAction"]),
    "FabricEgress.ecn_config": (512, [("standard_metadata.egress_port", 9, EXACT)],
                                ["FabricEgress.set_ecn", "NoAction"]),
}
FABRIC_ACTIONS = {
    "NoAction": [], "FabricIngress.drop": [("reason", 8)], "FabricIngress.set_priority": [("prio", 3)],
    "FabricIngress.usid_un": [], "FabricIngress.usid_un_psp": [], "FabricIngress.srv6_end": [],
    "FabricIngress.srv6_end_psp": [], "FabricIngress.srv6_end_x": PORT_DMAC,
    "FabricIngress.srv6_end_x_psp": PORT_DMAC, "FabricIngress.fwd": PORT_DMAC, "FabricIngress.usid_ua": PORT_DMAC,
    "FabricEgress.set_src_mac": [("mac", 48)], "FabricEgress.set_trim": [("threshold", 19), ("dscp", 6)],
    "FabricEgress.set_trimmable": [], "FabricEgress.set_ecn": [("threshold", 19)],
}
FABRIC_COUNTERS = {"FabricIngress.rx_port": 512, "FabricIngress.drops": 16, "FabricEgress.tx_port": 512,
                   "FabricEgress.trimmed": 512, "FabricEgress.ecn_marked": 512, "FabricEgress.drops": 16}


def test_fabric_p4info_fields_are_the_ones_the_source_declares() -> None:
    info = build_p4info(load_device_config(device_config_from_file(P4SRC / "fabric.p4")).model)
    action_name = {a.preamble.id: a.preamble.name for a in info.actions}
    tables = {t.preamble.name: t for t in info.tables}
    assert set(tables) == set(FABRIC_TABLES)
    for name, (size, keys, actions) in FABRIC_TABLES.items():
        t = tables[name]
        assert t.preamble.id >> 24 == 0x02, name  # P4Ids.TABLE
        assert t.preamble.alias == name.split(".")[1]
        assert t.size == size, name
        assert [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields] == [
            (i, k, w, kind) for i, (k, w, kind) in enumerate(keys, start=1)], name
        assert [action_name[r.id] for r in t.action_refs] == actions, name
        assert all(r.scope == 0 for r in t.action_refs), name  # TABLE_AND_DEFAULT: no @tableonly/@defaultonly
        assert (t.const_default_action_id, t.is_const_table, t.implementation_id) == (0, False, 0), name
        assert list(t.direct_resource_ids) == [], name
    actions = {a.preamble.name: a for a in info.actions}
    assert set(actions) == set(FABRIC_ACTIONS)
    for name, params in FABRIC_ACTIONS.items():
        assert actions[name].preamble.id >> 24 == 0x01, name  # P4Ids.ACTION
        assert [(p.id, p.name, p.bitwidth) for p in actions[name].params] == [
            (i, p, w) for i, (p, w) in enumerate(params, start=1)], name
    counters = {c.preamble.name: c for c in info.counters}
    assert {n: c.size for n, c in counters.items()} == FABRIC_COUNTERS
    assert all(c.preamble.id >> 24 == 0x12 and c.spec.unit == 3 for c in counters.values())  # COUNTER, BOTH
    registers = {r.preamble.name: r for r in info.registers}
    assert {n: (r.size, r.type_spec.bitstring.bit.bitwidth) for n, r in registers.items()} == {
        "FabricEgress.max_qdepth": (512, 32)}
    assert all(r.preamble.id >> 24 == 0x16 and r.preamble.alias == "max_qdepth" for r in registers.values())  # REGISTER
    assert not (info.direct_counters or info.meters or info.direct_meters or info.digests or info.action_profiles)
