"""`make shell` opens p4runtime-shell (in .venv-shell) against a running switch and
takes the pipeline from the switch.

A real `p4target run` serves P4Runtime on a free loopback port, its one port a veth in a
private namespace of ours; the shell reads commands from a pipe.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tools.cleanup import clean, find_leftovers

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4src" / "nic.p4"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A p4target switch running PROGRAM; yields (grpc address, its P4Info file)."""
    prefix = "mrcy" + secrets.token_hex(2)
    ns, pidfile, log = prefix, tmp_path / "sw.pid", tmp_path / "sw.log"
    addr = f"127.0.0.1:{_free_port()}"
    p4info = tmp_path / "nic.p4info.txtpb"
    proc: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run([str(REPO / ".venv/bin/p4target"), "compile", str(PROGRAM), "--p4info", str(p4info)],
                       check=True, capture_output=True, timeout=120)
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "add", f"{prefix}a", "type", "veth", "peer", "name", f"{prefix}b")
        _ip("-n", ns, "link", "set", f"{prefix}a", "up")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(REPO / ".venv/bin/p4target"), "run", str(PROGRAM), "-i", f"1@{prefix}a", "--netns", ns,
                 "--grpc-addr", addr, "--pid-file", str(pidfile)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while b"running" not in log.read_bytes():
            assert proc.poll() is None, f"p4target run exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"p4target run did not start: {log.read_text()}"
            time.sleep(0.1)
        yield addr, p4info
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        clean((prefix,), directory=tmp_path)
        left = find_leftovers((prefix,), tmp_path)
        assert left.empty(), f"left behind: {left.describe()}"


def test_make_shell_gets_the_pipeline_from_the_switch(switch: tuple[str, Path]) -> None:
    addr, p4info = switch
    tables = p4info.read_text().count("\ntables {") + p4info.read_text().startswith("tables {")
    assert tables > 0
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    res = subprocess.run(
        ["make", "--no-print-directory", "shell", f"GRPC_ADDR={addr}", "DEVICE_ID=0"],
        cwd=REPO, env=env, input='print("TABLES", len(list(tables)))\n', capture_output=True,
        text=True, timeout=180,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert f"TABLES {tables}" in res.stdout, res.stdout[-2000:]


def test_make_shell_without_a_switch_says_what_to_do() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    res = subprocess.run(
        ["make", "--no-print-directory", "shell", f"GRPC_ADDR=127.0.0.1:{_free_port()}"],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
    )
    assert res.returncode != 0
    assert "start one first" in res.stderr
