"""``p4target group FILE``: a bad group file is one clear message and exit status 1.

Runs the real command (no root needed: every mistake here is found before any
interface is opened) and checks the message names the file, the switch and the fix.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
FABRIC = str(REPO / "p4src" / "fabric.p4")


def sw(name: str, device_id: int, ports: dict, **kw) -> dict:
    return {"name": name, "program": FABRIC, "device_id": device_id, "ports": ports, **kw}


CASES = [
    ({"switches": [sw("a", 1, {1: "p4tx0"})]},
     "switch a: error: no grpc_addr: give the switch one, or the group a shared grpc_addr"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {1: "p4tx0"}), sw("b", 1, {1: "p4tx1"})]},
     "switch b: error: device id 1 is also a's on the shared address 127.0.0.1:0; give each switch there its own "
     "device id"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {1: "p4tx0"}), sw("a", 2, {1: "p4tx1"})]},
     "switch a: error: the name is given to two switches"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {1: "p4tx0"}), sw("b", 2, {2: "p4tx0"})]},
     "switch b: error: interface p4tx0 is also a port of a"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {600: "p4tx0"})]},
     "switch a: ports: Value error, port 600 must be 0..510"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {1: "p4tx0"}, colour="red")]},
     "switch a: colour: Extra inputs are not permitted"),
    ({"grpc_addr": "localhost", "switches": [sw("a", 1, {1: "p4tx0"})]},
     "grpc_addr: error: grpc_addr 'localhost' is not HOST:PORT"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {1: "p4tx0"}, program="/nonexistent.p4")]},
     "switch a: error: no such program file /nonexistent.p4"),
    ({"grpc_addr": "127.0.0.1:0", "switches": [sw("a", 1, {1: "p4tx0"}, port_rx_ring_frames={2: 128})]},
     "switch a: error: port_rx_ring_frames: port 2 is not one of its ports"),
]


@pytest.mark.parametrize("content,message", CASES, ids=[c[1].split(": ")[1][:30] for c in CASES])
def test_a_bad_group_file_is_one_clear_message(tmp_path: Path, content: dict, message: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(content))
    res = subprocess.run([sys.executable, "-m", "p4target", "group", str(path)], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"p4target: {path}") and message in lines[0], lines[0]


def test_a_group_file_that_is_not_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text("switches:\n  - name: [a\n")
    res = subprocess.run([sys.executable, "-m", "p4target", "group", str(path)], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith(f"p4target: {path}:") and "not YAML or JSON" in res.stderr
