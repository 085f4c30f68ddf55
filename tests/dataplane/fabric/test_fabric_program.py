"""fabric.p4 compiles without warnings and exposes the names docs/fabric.md promises.

Why: the controller writes tables and reads counters by these names over P4Runtime;
a rename in the P4 must fail here, next to the document that lists them.
"""

from __future__ import annotations

import subprocess
import sys

from tests.dataplane.tiny_fabric import FABRIC_P4, REPO

TABLES = {
    "Ingress.my_sid": ({("hdr.ipv6.dst_addr", 128, "lpm")},
                       {"Ingress.usid_un", "Ingress.usid_un_psp", "Ingress.srv6_end", "Ingress.srv6_end_psp",
                        "Ingress.srv6_end_x", "Ingress.srv6_end_x_psp"}),
    "Ingress.usid_fwd": ({("hdr.ipv6.dst_addr", 128, "lpm")}, {"Ingress.fwd", "Ingress.usid_ua"}),
    "Ingress.ipv6_route": ({("hdr.ipv6.dst_addr", 128, "lpm")}, {"Ingress.fwd"}),
    "Ingress.dscp_priority": ({("hdr.ipv6.traffic_class", 8, "ternary")}, {"Ingress.set_priority"}),
    "Egress.port_mac": ({("standard_metadata.egress_port", 9, "exact")}, {"Egress.set_src_mac"}),
    "Egress.trim_config": ({("standard_metadata.egress_port", 9, "exact")}, {"Egress.set_trim"}),
}
ACTION_PARAMS = {
    "Ingress.fwd": [("port", 9), ("dmac", 48)],
    "Ingress.usid_ua": [("port", 9), ("dmac", 48)],
    "Ingress.srv6_end_x": [("port", 9), ("dmac", 48)],
    "Ingress.srv6_end_x_psp": [("port", 9), ("dmac", 48)],
    "Ingress.set_priority": [("prio", 3)],
    "Egress.set_src_mac": [("mac", 48)],
    "Egress.set_trim": [("threshold", 19), ("dscp", 6)],
}
COUNTERS = {"Ingress.rx_port": 512, "Egress.tx_port": 512, "Egress.trimmed": 512,
            "Ingress.drops": 16, "Egress.drops": 16}


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
