"""The comparison flows' command lines (experiments/tcp_flow.py, experiments/udp_stream.py),
as the TCP experiment and the goodput bench start them in the hosts: here on loopback.

Why without a network: the flows themselves are plain sockets; what is checked is
that ``recv`` and ``send`` take the options their callers pass (experiments/tcp.py
``_flow``), report one JSON line, and refuse a bad option in one ``error:`` line
(exit status 2), and a missing peer or a busy port in one too (exit status 1).
"""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _as_a_user() -> None:  # the directory's fixture wants the compiled fast path; no switch runs here
    pass


TCP, UDP = "experiments.tcp_flow", "experiments.udp_stream"


def _pair(module: str, recv_args: list[str], send_args: list[str],
          addr: str = "::1") -> tuple[dict[str, object], dict[str, object]]:
    recv = subprocess.Popen([sys.executable, "-m", module, "recv", "--listen", addr, *recv_args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert recv.stdout is not None
        assert json.loads(recv.stdout.readline()) == {"listening": addr}
        sent = subprocess.run([sys.executable, "-m", module, "send", "--to", addr, *send_args], cwd=REPO,
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


@pytest.mark.parametrize("addr", ["::1", "127.0.0.1"])
def test_a_tcp_flow_delivers_every_byte_verified(addr: str) -> None:
    got, sent = _pair(TCP, ["--bytes", "300000", "--timeout", "20"], ["--bytes", "300000", "--timeout", "20"], addr)
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
    # the Mininet package's MRC WRITE flow: a wait or a rate that never ends
    ("topologies.mrc_flow", ["recv", "--seconds", "nan"], "--seconds"),
    ("topologies.mrc_flow", ["recv", "--seconds", "inf"], "--seconds"),
    ("topologies.mrc_flow", ["send", "::1", "--evs", "4096", "--pps", "inf"], "--pps': inf: give a finite number"),
])
def test_a_bad_option_is_one_error_line_and_status_2(module: str, argv: list[str], says: str) -> None:
    r = subprocess.run([sys.executable, "-m", module, *argv], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == "", (r.stdout, r.stderr)
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0], err


def _run(module: str, argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=20, **kw)  # type: ignore[call-overload]


def _one_line(r: subprocess.CompletedProcess[str], status: int, line: str) -> None:
    assert (r.returncode, r.stderr.splitlines()) == (status, [line]), (r.stdout, r.stderr)


NOT_SECONDS = "give a number of seconds more than 0 and at most 86400 (a day)"
NOT_AN_ADDRESS = "give an IPv6 or IPv4 address (e.g. fd00::1 or 127.0.0.1)"


@pytest.mark.parametrize(("module", "argv", "line"), [
    (TCP, ["recv", "--listen", "foo", "--bytes", "10", "--timeout", "0.5"],
     f"error: Invalid value for '--listen': 'foo': {NOT_AN_ADDRESS} (see python -m {TCP} recv --help)"),
    (TCP, ["send", "--to", "::1", "--bytes", "10", "--timeout", "inf"],
     f"error: Invalid value for '--timeout': inf: {NOT_SECONDS} (see python -m {TCP} send --help)"),
    (TCP, ["send", "--to", "::1", "--bytes", "10", "--timeout", "0"],
     f"error: Invalid value for '--timeout': 0: {NOT_SECONDS} (see python -m {TCP} send --help)"),
    (TCP, ["recv", "--listen", "::1", "--bytes", "10", "--timeout", "1e300"],
     f"error: Invalid value for '--timeout': 1e+300: {NOT_SECONDS} (see python -m {TCP} recv --help)"),
    (TCP, ["send", "--to", "::1", "--bytes", str((1 << 30) + 1), "--timeout", "0.5"],
     f"error: Invalid value for '--bytes': Input should be less than or equal to 1073741824 "
     f"(see python -m {TCP} send --help)"),
    (UDP, ["recv", "--listen", "foo", "--bytes", "10", "--timeout", "0.5"],
     f"error: Invalid value for '--listen': 'foo': {NOT_AN_ADDRESS} (see python -m {UDP} recv --help)"),
    (UDP, ["send", "--to", "foo", "--bytes", "10"],
     f"error: Invalid value for '--to': 'foo': {NOT_AN_ADDRESS} (see python -m {UDP} send --help)"),
    (UDP, ["recv", "--listen", "::1", "--bytes", "10", "--timeout", "inf"],
     f"error: Invalid value for '--timeout': inf: {NOT_SECONDS} (see python -m {UDP} recv --help)"),
    (UDP, ["send", "--to", "127.0.0.1", "--bytes", "99999999999999999999"],  # was a stream of ~forever
     f"error: Invalid value for '--bytes': Input should be less than or equal to 1073741824 "
     f"(see python -m {UDP} send --help)"),
])
def test_a_bad_address_time_or_size_is_one_error_line_and_status_2(module: str, argv: list[str], line: str) -> None:
    _one_line(_run(module, argv), 2, line)


REFUSED = ("error: --to ::1: no receiver on TCP port 5201 within 0.5 s (Connection refused); start `recv --listen ::1` "
           "there first")


@pytest.mark.parametrize(("argv", "line"), [
    (["recv", "--listen", "::1", "--bytes", "10", "--timeout", "0.5"],
     "error: no sender within 0.5 s (is `send --to ::1` running?)"),
    (["send", "--to", "::1", "--bytes", "10", "--timeout", "0.5"], REFUSED),
    # more than one randbytes() draw holds (2**28 bytes): the data is drawn a megabyte at a time
    (["send", "--to", "::1", "--bytes", "300000000", "--timeout", "0.5"], REFUSED),
])
def test_a_tcp_flow_without_its_peer_is_one_error_line_and_status_1(argv: list[str], line: str) -> None:
    _one_line(_run(TCP, argv), 1, line)


@pytest.mark.parametrize(("module", "kind", "port"), [(TCP, socket.SOCK_STREAM, 5201), (UDP, socket.SOCK_DGRAM, 5202)])
def test_a_busy_port_is_one_error_line_and_status_1(module: str, kind: int, port: int) -> None:
    with socket.socket(socket.AF_INET6, kind) as taken:
        taken.bind(("::1", port))
        if kind == socket.SOCK_STREAM:
            taken.listen(1)
        r = _run(module, ["recv", "--listen", "::1", "--bytes", "10", "--timeout", "0.5"])
    proto = "TCP" if kind == socket.SOCK_STREAM else "UDP"
    _one_line(r, 1, f"error: --listen ::1: cannot listen on {proto} port {port} (Address already in use); give an "
                    "address of this host whose port is free")


def test_data_larger_than_the_memory_is_one_error_line_and_status_1() -> None:
    def small_memory() -> None:  # 768 MB of address space: the interpreter fits, a GiB of data does not
        resource.setrlimit(resource.RLIMIT_AS, (768 << 20, 768 << 20))

    r = _run(TCP, ["send", "--to", "::1", "--bytes", str(1 << 30), "--timeout", "0.5"], preexec_fn=small_memory)
    _one_line(r, 1, "error: --bytes 1073741824: not enough memory here to hold the data; give fewer bytes")
