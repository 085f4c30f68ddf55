"""The comparison flows' command lines (experiments/tcp_flow.py, experiments/udp_stream.py),
as the TCP experiment and the goodput bench start them in the hosts: here on loopback.

Why without a network: the flows themselves are plain sockets; what is checked is
that ``recv`` and ``send`` take the options their callers pass (experiments/tcp.py
``_flow``), report one JSON line, and refuse a bad option in one ``error:`` line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _as_a_user() -> None:  # the directory's fixture wants the compiled fast path; no switch runs here
    pass


def _pair(module: str, recv_args: list[str], send_args: list[str]) -> tuple[dict[str, object], dict[str, object]]:
    recv = subprocess.Popen([sys.executable, "-m", module, "recv", "--listen", "::1", *recv_args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert recv.stdout is not None
        assert json.loads(recv.stdout.readline()) == {"listening": "::1"}
        sent = subprocess.run([sys.executable, "-m", module, "send", "--to", "::1", *send_args], cwd=REPO,
                              capture_output=True, text=True, timeout=60)
        out, err = recv.communicate(timeout=60)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    assert sent.returncode == 0 and recv.returncode == 0, sent.stderr + err
    return json.loads(out.strip().splitlines()[-1]), json.loads(sent.stdout.strip().splitlines()[-1])


def _spent_some_cpu(*reports: dict[str, object]) -> None:
    """Each end reports the CPU it used while the bytes moved: some, and less than the
    whole run could have used (a few seconds here on loopback)."""
    for r in reports:
        cpu = r["cpu_s"]
        assert isinstance(cpu, float) and 0 < cpu < 5, r


def test_a_tcp_flow_delivers_every_byte_verified() -> None:
    got, sent = _pair("experiments.tcp_flow", ["--bytes", "300000", "--timeout", "20"],
                      ["--bytes", "300000", "--timeout", "20"])
    assert sent["bytes"] == 300000
    assert got["ok"] is True and got["bytes"] == 300000
    _spent_some_cpu(got, sent)


def test_a_udp_stream_counts_its_datagrams() -> None:
    # 100,000 bytes in datagrams of 1,000 (each starts with its 4-byte sequence number)
    got, sent = _pair("experiments.udp_stream", ["--bytes", "100000", "--timeout", "20"],
                      ["--bytes", "100000", "--size", "1000"])
    assert sent["datagrams"] == 100 and sent["bytes"] == 100000
    assert got["sent_seen"] == 100 and 0 < got["datagrams"] <= 100  # loopback may drop, never adds
    _spent_some_cpu(got, sent)


@pytest.mark.parametrize(("module", "argv", "says"), [
    ("experiments.tcp_flow", ["recv", "--bytes", "10"], "--listen"),
    ("experiments.tcp_flow", ["send", "--to", "::1", "--bytes", "0"], "--bytes"),
    ("experiments.udp_stream", ["send", "--to", "::1", "--bytes", "10", "--size", "4"], "--size"),
    ("experiments.udp_stream", ["recv", "--listen", "::1", "--bytes", "x"], "--bytes"),
])
def test_a_bad_option_is_one_error_line_and_status_2(module: str, argv: list[str], says: str) -> None:
    r = subprocess.run([sys.executable, "-m", module, *argv], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
