"""`make build` compiles every program in the P4 source directory into its P4Info.

The tests point the Makefile at a temporary source directory (`P4SRC=`) and build
directory (`BUILD=`) so they never touch the project's own build outputs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


REPO = Path(__file__).resolve().parents[2]

MINIMAL_P4 = """\
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table mac_fwd {
        key = { hdr.ethernet.dst : exact; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply { mac_fwd.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _make(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_build_with_no_programs_skips_cleanly(tmp_path: Path) -> None:
    src = tmp_path / "p4src"
    src.mkdir()
    res = _make("build", f"P4SRC={src}", f"BUILD={tmp_path / 'out'}")
    assert res.returncode == 0, res.stderr
    assert "no P4 programs" in res.stdout
    assert not (tmp_path / "out").exists()


def test_build_compiles_each_program_once(tmp_path: Path) -> None:
    src, out = tmp_path / "p4src", tmp_path / "out"
    src.mkdir()
    (src / "mini.p4").write_text(MINIMAL_P4)
    res = _make("build", f"P4SRC={src}", f"BUILD={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    p4info = out / "mini.p4info.txtpb"
    assert "mac_fwd" in p4info.read_text()
    first = p4info.stat().st_mtime_ns
    again = _make("build", f"P4SRC={src}", f"BUILD={out}")
    assert again.returncode == 0, again.stderr
    assert again.stdout == "", "an up-to-date program is not compiled again, silently"
    assert p4info.stat().st_mtime_ns == first


def test_build_fails_on_a_broken_program_and_leaves_no_output(tmp_path: Path) -> None:
    src, out = tmp_path / "p4src", tmp_path / "out"
    src.mkdir()
    (src / "broken.p4").write_text(MINIMAL_P4.replace("transition accept;", "transition nowhere_state;"))
    res = _make("build", f"P4SRC={src}", f"BUILD={out}")
    assert res.returncode != 0
    assert "broken.p4" in res.stderr
    assert "Traceback" not in res.stderr
    assert not (out / "broken.p4info.txtpb").exists()
