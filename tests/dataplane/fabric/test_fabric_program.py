"""fabric.p4 compiles without warnings and exposes the names docs/fabric.md promises.

Why: the controller writes tables and reads counters by these names over P4Runtime;
a rename in the P4 must fail here, next to the document that lists them.
"""

from __future__ import annotations

import subprocess
import sys

from tests.dataplane.fabric_net import FABRIC_P4, REPO

TABLES = {
    "FabricIngress.my_sid": ({("hdr.ipv6.dst_addr", 128, "lpm")},
                       {"FabricIngress.usid_un", "FabricIngress.usid_un_psp", "FabricIngress.srv6_end", "FabricIngress.srv6_end_psp",
                        "FabricIngress.srv6_end_x", "FabricIngress.srv6_end_x_psp"}),
    "FabricIngress.usid_fwd": ({("hdr.ipv6.dst_addr", 128, "lpm")}, {"FabricIngress.fwd", "FabricIngress.usid_ua"}),
    "FabricIngress.ipv6_route": ({("hdr.ipv6.dst_addr", 128, "lpm")}, {"FabricIngress.fwd"}),
    "FabricIngress.dscp_priority": ({("hdr.ipv6.traffic_class", 8, "ternary")}, {"FabricIngress.set_priority"}),
    "FabricEgress.port_mac": ({("standard_metadata.egress_port", 9, "exact")}, {"FabricEgress.set_src_mac"}),
    "FabricEgress.trim_config": ({("standard_metadata.egress_port", 9, "exact")}, {"FabricEgress.set_trim"}),
    "FabricEgress.trim_class": ({("hdr.ipv6.traffic_class", 8, "ternary")}, {"FabricEgress.set_trimmable"}),
}
ACTION_PARAMS = {
    "FabricIngress.fwd": [("port", 9), ("dmac", 48)],
    "FabricIngress.usid_ua": [("port", 9), ("dmac", 48)],
    "FabricIngress.srv6_end_x": [("port", 9), ("dmac", 48)],
    "FabricIngress.srv6_end_x_psp": [("port", 9), ("dmac", 48)],
    "FabricIngress.set_priority": [("prio", 3)],
    "FabricEgress.set_src_mac": [("mac", 48)],
    "FabricEgress.set_trim": [("threshold", 19), ("dscp", 6)],
    "FabricEgress.set_trimmable": [],
}
COUNTERS = {"FabricIngress.rx_port": 512, "FabricEgress.tx_port": 512, "FabricEgress.trimmed": 512,
            "FabricIngress.drops": 16, "FabricEgress.drops": 16}


def test_compiles_without_warnings() -> None:
    from p4target.compiler import compile_file

    program = compile_file(FABRIC_P4)
    assert program.model.warnings == ()
    res = subprocess.run([sys.executable, "-m", "p4target", "compile", str(FABRIC_P4)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert (res.returncode, res.stderr) == (0, "")


def test_names_the_controller_uses() -> None:
    from p4target.compiler import compile_file

    model = compile_file(FABRIC_P4).model
    for name, (keys, actions) in TABLES.items():
        table = model.table(name)
        assert {(k.name, k.bitwidth, k.match_kind) for k in table.keys} == keys
        assert {a.name for a in table.actions} - {"NoAction"} == actions
        assert table.default_action == "NoAction"
    for name, params in ACTION_PARAMS.items():
        assert [(p.name, p.bitwidth) for p in model.action(name).params] == params
    for name, size in COUNTERS.items():
        ext = model.extern(name)
        assert (ext.kind, ext.size, ext.unit) == ("counter", size, "packets_and_bytes")
