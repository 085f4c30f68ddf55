"""``mrc-send --transport roce`` and ``mrc-recv --transport roce`` as processes on
loopback: real sockets and packets, every byte checked against what the test itself
expects (``--bytes N --seed S`` sends ``random.Random(S).randbytes(N)``), the QP's EV
recomputed here from its 4-tuple."""

from __future__ import annotations

import json
import random
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.endpoints.test_cli_loopback import BIN, addresses, finish, send, start_recv
from tests.endpoints.test_ecmp_hash import crc32_bitwise, key

EVS = "20000-20063"


def ev_of(src: str, dst: str, sport: int, dport: int) -> int:
    return 20000 + crc32_bitwise(key(src, dst, sport, dport)) % 64


def test_a_transfer_is_verified_and_reported(tmp_path: Path) -> None:
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--transport", "roce", "--out", str(tmp_path / "out.bin"),
                      "--report", str(tmp_path / "r.json"), "--timeout", "60")
    s = send(rx, sx, port, "--transport", "roce", "--bytes", "3000000", "--seed", "4", "--ev-list", EVS,
             "--line-rate", "400", "--report", str(tmp_path / "s.json"))
    code, out, err = finish(recv)
    assert s.returncode == 0, s.stderr
    assert code == 0, err
    assert (tmp_path / "out.bin").read_bytes() == random.Random(4).randbytes(3_000_000)
    rep = json.loads((tmp_path / "s.json").read_text())
    assert (rep["transport"], rep["state"], rep["ok"], rep["verified"], rep["error"]) == ("roce", "complete", True,
                                                                                       True, None)
    assert rep["bytes"] == 3_000_000 and rep["packets"] == 3000 and rep["packets_sent"] >= 3000
    assert rep["ev"] == ev_of(sx, rx, rep["source_port"], port) == rep["ecmp"]["index"] + 20000
    assert rep["ecmp"]["source_port"] == rep["source_port"] >= 1024 and rep["dscp"] == 26
    assert rep["completion_time_s"] > 0 and rep["goodput_bps"] > 0
    assert rep["delivered_series"][-1][1] == 3_000_000
    assert rep["rate_bps"]["line"] == 400e6 and rep["cc"] == "dcqcn"
    assert set(rep["go_back_n"]) == {"rewinds", "resent", "naks_received", "naks_stale", "timeouts", "retries",
                                     "retries_most_in_row", "retry_count", "ack_timeout_s"}
    assert f"EV {rep['ev']} (source port {rep['source_port']}): verified by the receiver" in s.stdout
    r = json.loads((tmp_path / "r.json").read_text())
    (c,) = r["connections"]
    assert r["ok"] and r["transport"] == "roce" and c["verdict"] == "verified" and c["ev"] == rep["ev"]
    assert c["peer"] == f"{sx}:{rep['source_port']}" and c["received_bytes"] == 3_000_000
    assert c["messages"] == 3  # 1024-packet messages: 1024, 1024, 952
    assert set(c["counts"]) == {"packets", "acks", "naks", "cnps", "ce", "out_of_sequence", "duplicates"}
    assert c["counts"]["packets"] == 3000


def test_print_ev_and_path_ev(tmp_path: Path) -> None:
    rx, sx, port = addresses()
    s = send(rx, sx, port, "--transport", "roce", "--ev-list", EVS, "--source-port", "50000", "--print-ev")
    assert s.returncode == 0, s.stderr
    assert f"EV {ev_of(sx, rx, 50000, port)} " in s.stdout and f"[{sx}]:50000 -> [{rx}]:{port}" in s.stdout
    # --path-ev: the first port from 49152 whose hash lands on the EV
    want = ev_of(sx, rx, 49160, port)
    first = next(p for p in range(49152, 65536) if ev_of(sx, rx, p, port) == want)
    s = send(rx, sx, port, "--transport", "roce", "--ev-list", EVS, "--path-ev", str(want), "--print-ev")
    assert s.returncode == 0, s.stderr
    assert f"[{sx}]:{first} -> " in s.stdout and f"EV {want} " in s.stdout


def bound(addr: str, wait: float = 60.0) -> bool:
    """True once a UDP socket is bound to IPv4 ``addr`` (/proc/net/udp: the address in
    hex, host byte order), within ``wait`` seconds: the command has started (a busy
    machine takes seconds to start Python)."""
    want = socket.inet_aton(addr)[::-1].hex().upper() + ":"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if any(line.split()[1].startswith(want) for line in Path("/proc/net/udp").read_text().splitlines()[1:]):
            return True
        time.sleep(0.05)
    return False


def test_a_dead_receiver_exhausts_the_retries(tmp_path: Path) -> None:
    """The receiver dies during the transfer: the sender's local ACK timer (50 ms)
    expires 1 + 7 times without progress, the QP goes to the error state, the report
    says so and the command exits 1 with one line."""
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--transport", "roce", "--timeout", "60")
    sender = subprocess.Popen([str(BIN / "mrc-send"), "--to", rx, "--bind", sx, "--port", str(port), "--transport",
                               "roce", "--bytes", "2000000", "--ev-list", EVS, "--line-rate", "4", "--ack-timeout",
                               "0.05", "--report", str(tmp_path / "s.json"), "--timeout", "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert bound(sx)  # the sender started: its OPEN is accepted at once
    time.sleep(1.0)  # well into the transfer (4 Mb/s: 2 MB take 4 s)
    recv.kill()
    finish(recv)
    out, err = sender.communicate(timeout=60)
    assert sender.returncode == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: retry count exceeded (7 retries without progress"), err
    rep = json.loads((tmp_path / "s.json").read_text())
    assert (rep["state"], rep["ok"], rep["verified"]) == ("error", False, False)
    assert rep["error"].startswith("retry count exceeded")
    g = rep["go_back_n"]
    assert (g["timeouts"], g["retries_most_in_row"]) == (8, 7)
    assert rep["longest_stall_s"] >= 8 * 0.05
    assert 0 < rep["acked_bytes"] < 2_000_000


def test_a_transport_mismatch_is_refused_with_the_fix(tmp_path: Path) -> None:
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--transport", "roce", "--timeout", "5")
    s = send(rx, sx, port, "--bytes", "1000", "--ev-list", EVS, "--timeout", "10")
    recv.kill()
    finish(recv)
    assert s.returncode == 1
    assert "give mrc-send and mrc-recv the same --transport" in s.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("args, message", [
    (["--transport", "tcp"], "--transport 'tcp': mrc or roce"),
    (["--cc", "dcqcn"], "--cc applies to --transport roce only"),
    (["--print-ev"], "--print-ev applies to --transport roce only"),
    (["--transport", "roce", "--rate", "100"], "--rate is MRC-lite's pacing: with --transport roce give --line-rate"),
    (["--transport", "roce", "--cc", "timely"], "--cc 'timely': dcqcn or none"),
    (["--transport", "roce", "--retry-count", "8"], "--retry-count 8: give 0..7"),
    (["--transport", "roce", "--dscp", "64"], "--dscp 64: give a DSCP, 0..63"),
    (["--transport", "roce", "--message-size", "1500"], "--message-size 1500: give a multiple of --mtu (1000)"),
    (["--transport", "roce", "--line-rate", "0"], "--line-rate 0.0: give more than 0 Mb/s"),
    (["--transport", "roce", "--ack-timeout", "nan"], "--ack-timeout nan: give more than 0 seconds"),
    (["--transport", "roce", "--dcqcn-g", "2"], "--dcqcn-g 2.0: give a gain in (0, 1]"),
    (["--transport", "roce", "--path-ev", "5"], "--path-ev 5: not one of the sender's 64 EVs"),
    (["--transport", "roce", "--path-ev", "20001", "--source-port", "5000"], "give --path-ev or --source-port"),
    (["--transport", "roce", "--print-ev"], "--print-ev: the path hashes the source port; give --source-port"),
])
def test_bad_options_are_one_line(args: list[str], message: str) -> None:
    s = send("127.0.0.1", "127.0.0.2", 4791, "--timeout", "1", "--bytes", "1000", "--ev-list", EVS, *args,
             timeout=30)
    assert s.returncode == 1
    lines = s.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], s.stderr


@pytest.mark.parametrize("args, message", [
    (["--cnp-dscp", "48"], "--cnp-dscp applies to --transport roce only"),
    (["--transport", "roce", "--cnp-interval", "-1"], "--cnp-interval -1.0: give 0 seconds or more"),
    (["--transport", "roce", "--dscp", "99"], "--dscp 99: give a DSCP, 0..63"),
])
def test_bad_receiver_options_are_one_line(args: list[str], message: str) -> None:
    rx, _sx, port = addresses()
    p = start_recv(rx, port, *args)
    code, _out, err = finish(p)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err
