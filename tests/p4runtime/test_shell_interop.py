"""p4runtime-shell (its Python API, unchanged, in .venv-shell) against our server."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path


from p4target.p4info import p4info_text
from tests.p4runtime.conftest import tframe, t_out

ROOT = Path(__file__).resolve().parents[2]
SHELL_PY = ROOT / ".venv-shell" / "bin" / "python"
SCRIPT = Path(__file__).parent / "shell" / "drive_shell.py"


def test_p4runtime_shell_drives_the_server(rig, rt_config, tmp_path: Path) -> None:
    assert SHELL_PY.exists(), ".venv-shell is missing: run `make deps` to create it"
    from p4target.device_config import load_device_config

    p4info_path = tmp_path / "p4info.txt"
    p4info_path.write_text(p4info_text(load_device_config(rt_config[1]).model))
    cfg_path = tmp_path / "device_config.json"
    cfg_path.write_bytes(rt_config[1])
    proc = subprocess.Popen([str(SHELL_PY), str(SCRIPT), f"127.0.0.1:{rig.server.bound_port}", str(p4info_path),
                             str(cfg_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        assert json.loads(line or "{}").get("ready"), proc.stderr.read()
        # the shell's packet-out (sent before "ready") leaves port 2 unchanged, metadata stripped
        packet_out = bytes.fromhex("0a0000000003" + "0a00000000fe" + "0800") + b"x" * 20
        deadline = time.monotonic() + 10
        while (2, packet_out) not in rig.outputs and time.monotonic() < deadline:
            time.sleep(0.02)
        assert rig.outputs == [(2, packet_out)], rig.outputs
        # entries written by the shell steer frames
        assert [p for p, _ in rig.send(1, tframe(dst=0x0A0000000001))] == [3]
        out = rig.send(1, tframe(dst=0x0A0000000001, k16=0x1234, k8=6, key32=0x0A010101))
        assert t_out(out[0][1]) == 0x42
        rig.send(9, tframe(dst=0x0A0000000002))  # to the CPU: a packet-in for the shell
        stdout, stderr = proc.communicate("\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    seen = json.loads(stdout.strip().splitlines()[-1])
    assert seen["exact"] == [[], ["03"]], stderr
    assert seen["acl_priorities"] == [7]
    assert seen["mcast"] == [2] and seen["members"] == [1] and seen["counter"] == [0]
    assert "ALREADY_EXISTS" in seen["duplicate"]
    (payload, md), = seen["packet_in"]
    assert bytes.fromhex(payload) == tframe(dst=0x0A0000000002) and md[0] == "09"
