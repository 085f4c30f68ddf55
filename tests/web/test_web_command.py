"""`mrcctl web` as a person runs it: where it listens, and its mistakes in one line.

The command runs as its own process (``python -m controller.cli``), on the loopback
only: an address it cannot use and a port already taken are one ``mrcctl: error:``
line and exit status 1; an address beyond the loopback is taken with a warning that
the page has no login.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from tests.web.browser import REPO, get

TOPO = ["--topology", "topologies/one-plane.yaml"]


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", *TOPO, "web", *args], cwd=REPO, text=True,
                          capture_output=True, timeout=60, env={**os.environ, "MRC_P4_RUN_DIR": str(tmp_path)})


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = _run(tmp_path, "--port", str(port))
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        f"mrcctl: error: cannot listen on 127.0.0.1 port {port}: Address already in use; give another --port "
        "(0: any free one) or --bind"]
    assert res.stdout == ""


def test_an_address_that_is_none_is_one_line(tmp_path: Path) -> None:
    res = _run(tmp_path, "--bind", "300.1.2.3", "--port", "0")
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mrcctl: error: --bind 300.1.2.3: not an address of this machine")


def test_a_bad_port_is_a_usage_error(tmp_path: Path) -> None:
    res = _run(tmp_path, "--port", "70000")
    assert res.returncode == 2 and "--port" in res.stderr


def test_beyond_the_loopback_it_warns_that_there_is_no_login(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "controller.cli", *TOPO, "web", "--bind", "0.0.0.0", "--port", "0"],
                            cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "MRC_P4_RUN_DIR": str(tmp_path)})
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline()
        assert line.startswith("web: http://0.0.0.0:") and "no running network: the drawing only" in line
        port = int(line.split()[1].rsplit(":", 1)[1].strip("/"))
        assert "one-plane" in get(f"http://127.0.0.1:{port}/api/model")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert err.splitlines()[0] == ("web: warning: listening on 0.0.0.0: the page and /metrics have no login; "
                                   "anyone who can reach this address sees the fabric")
    assert proc.returncode == 0
