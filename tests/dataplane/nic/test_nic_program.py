"""nic.p4 as a program: compiles without warnings and exposes the names docs/nic.md lists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from p4target.compiler import compile_file

REPO = Path(__file__).resolve().parents[3]
NIC_P4 = REPO / "p4src" / "nic.p4"

TABLES = {
    "NicIngress.port_role": ["standard_metadata.ingress_port"],
    "NicIngress.ev_mode": ["hdr.ipv6.dst_addr"],
    "NicIngress.ev_table": ["hdr.ipv6.dst_addr", "meta.ev"],
    "NicIngress.gen_plane": ["meta.plane"],
    "NicIngress.spray_mode": ["meta.is_mrc", "hdr.ipv6.traffic_class", "hdr.ipv6.next_hdr"],
    "NicIngress.spray": ["hdr.ipv6.dst_addr", "meta.spray_key"],
    "NicIngress.my_sid": ["hdr.ipv6.dst_addr"],
    "NicEgress.egress_port": ["standard_metadata.egress_port"],
}
EXTERNS = {
    ("counter", "NicIngress.drops"), ("counter", "NicIngress.ev_tx"), ("counter", "NicIngress.ev_rx"),
    ("counter", "NicIngress.plane_rx"), ("counter", "NicEgress.plane_tx"), ("counter", "NicEgress.drops"),
    ("register", "NicIngress.spray_seq"), ("action_selector", "NicIngress.spray_selector"),
}


def test_compiles_without_warnings_and_names_match_the_docs():
    model = compile_file(NIC_P4).model
    assert model.warnings == ()
    assert {t.name: [k.name for k in t.keys] for t in model.tables} == TABLES
    assert {(e.kind, e.name) for e in model.externs} == EXTERNS
    assert model.table("NicIngress.spray").implementation == "NicIngress.spray_selector"
    assert [p.name for p in model.action("NicIngress.set_generated").params] == ["plane", "spine"]
    assert [p.name for p in model.action("NicIngress.decap_to_host").params] == ["port", "trim_dscp"]
    docs = (REPO / "docs" / "nic.md").read_text()
    for name in list(TABLES) + [n for _, n in EXTERNS]:
        assert f"`{name}`" in docs, name


def test_p4target_compile_is_silent(tmp_path):
    out = tmp_path / "nic.p4info.txtpb"
    run = subprocess.run([sys.executable, "-m", "p4target", "compile", str(NIC_P4), "--p4info", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stderr == "" and run.stdout == ""
    assert 'name: "NicIngress.spray_selector"' in out.read_text()
