"""mrc-send and mrc-recv as processes on loopback: real sockets, real packets, every
byte checked against what the test itself expects (``--bytes N --seed S`` sends
``random.Random(S).randbytes(N)``, as the command's help says)."""

from __future__ import annotations

import json
import os
import random
import resource
import select
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from endpoints import wire

BIN = Path(sys.executable).parent
RNG = random.Random(os.getpid() ^ int(time.time()))


def addresses() -> tuple[str, str, int]:
    """Two loopback addresses and a port no other test run uses at the same time."""
    a, b = RNG.randrange(1, 250), RNG.randrange(1, 250)
    return f"127.{a}.{b}.1", f"127.{a}.{b}.2", RNG.randrange(20000, 60000)


def start_recv(listen: str, port: int, *args: str) -> subprocess.Popen:
    """An mrc-recv, returned once it listens (its first line; a loaded machine takes a
    second or more to start it, and a datagram sent before it listens is lost), or
    once it has ended (a refused option: its exit status and error are the test's)."""
    p = subprocess.Popen([str(BIN / "mrc-recv"), "--listen", listen, "--port", str(port), "--linger", "0.2", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], 30)
    if ready:
        line = p.stdout.readline()
        assert line == "" or line.startswith("listening on "), line
    return p


def send(to: str, bind: str, port: int, *args: str, timeout: float = 60, **run: Any) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "mrc-send"), "--to", to, "--bind", bind, "--port", str(port), *args],
                          capture_output=True, text=True, timeout=timeout, **run)


def finish(p: subprocess.Popen) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err


def test_transfer_is_verified_and_reported(tmp_path: Path) -> None:
    rx, sx, port = addresses()
    ev0 = RNG.randrange(30000, 40000)
    recv = start_recv(rx, port, "--out", str(tmp_path / "out.bin"), "--report", str(tmp_path / "r.json"),
                      "--timeout", "30")
    s = send(rx, sx, port, "--bytes", "300000", "--seed", "3", "--ev-list", f"{ev0}-{ev0 + 15}",
             "--cc-target-min", "0.003", "--retire-delay", "0.02", "--report", str(tmp_path / "s.json"))
    code, out, err = finish(recv)
    assert s.returncode == 0, s.stderr
    assert code == 0, err
    assert "verified by the receiver" in s.stdout and "verified" in out
    assert (tmp_path / "out.bin").read_bytes() == random.Random(3).randbytes(300000)
    rep = json.loads((tmp_path / "s.json").read_text())
    assert rep["ok"] and rep["bytes"] == 300000 and rep["packets"] == 300
    assert [e["ev"] for e in rep["per_ev"]] == list(range(ev0, ev0 + 16))
    assert sum(e["sent"] for e in rep["per_ev"]) == rep["packets_sent"] >= 300
    assert rep["delivered_series"][-1][1] == 300000
    assert rep["completion_time_s"] > 0 and rep["goodput_bps"] > 0
    assert set(rep["retransmissions"]) == {"total", "timeout", "nack", "trim_nack"}
    assert rep["retire_delay_s"] == 0.02  # --retire-delay reaches the sender
    # The delay target: half the smallest RTT seen, at least the --cc-target-min given.
    w = rep["window"]
    assert w["target_s"] == max(0.003, 0.5 * w["base_rtt_s"]), w
    # The sender's CPU is that of its transfer alone: one thread, so never more than the
    # transfer's own time (the interpreter's start and imports, counted too, would be
    # more than this 300 KB transfer takes on loopback).
    assert 0 < rep["cpu_s"] <= rep["completion_time_s"] + 0.01, (rep["cpu_s"], rep["completion_time_s"])
    rrep = json.loads((tmp_path / "r.json").read_text())
    assert rrep["cpu_s"] > 0
    (c,) = rrep["connections"]
    assert c["verdict"] == "verified" and c["received_bytes"] == 300000
    # The sender sends from the MRC port (--port), so the answers go to it: a NIC takes
    # only packets to that port for MRC-lite.
    assert c["peer"] == f"{sx}:{port}"
    # The receiver read every EV from its data packets (BTH pkey).
    assert sorted(int(ev) for ev in c["per_ev_packets"]) == list(range(ev0, ev0 + 16))


def test_evs_come_from_the_topology(tmp_path: Path) -> None:
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--timeout", "30")
    s = send(rx, sx, port, "--bytes", "80000", "--planes", "4", "--evs", "8", "--src-host", "h1", "--dst-host", "h3",
             "--report", str(tmp_path / "s.json"))
    assert s.returncode == 0, s.stderr
    assert finish(recv)[0] == 0
    rep = json.loads((tmp_path / "s.json").read_text())
    # EXPLICIT EVs are 0x1000 + k, EV k on plane k mod 4 (docs/addressing.md).
    assert [(e["ev"], e["plane"]) for e in rep["per_ev"]] == [(0x1000 + k, k % 4) for k in range(8)]
    assert sorted(rep["per_plane_packets"]) == ["0", "1", "2", "3"]
    assert sum(rep["per_plane_packets"].values()) == rep["packets_sent"]


def test_a_file_is_sent_as_is(tmp_path: Path) -> None:
    rx, sx, port = addresses()
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(12345))
    recv = start_recv(rx, port, "--out", str(tmp_path / "out.bin"), "--bytes", "12345", "--timeout", "30")
    s = send(rx, sx, port, "--in", str(src), "--ev-list", f"{port + 1}-{port + 4}")
    assert s.returncode == 0, s.stderr
    assert finish(recv)[0] == 0
    assert (tmp_path / "out.bin").read_bytes() == src.read_bytes()


def test_a_refused_transfer_fails_both_sides() -> None:
    """The receiver waits its whole --timeout for a transfer it can take: long enough
    for a sender that a loaded machine takes seconds to start."""
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--bytes", "1000", "--timeout", "8")
    s = send(rx, sx, port, "--bytes", "2000", "--ev-list", f"{port + 1}")
    code, _, err = finish(recv)
    assert s.returncode == 1
    assert s.stderr.strip().splitlines()[-1].startswith("error: receiver refused the transfer: transfer length")
    assert code == 1 and "0 of 1 transfers complete" in err


def test_no_receiver_is_a_timeout() -> None:
    rx, sx, port = addresses()
    s = send(rx, sx, port, "--bytes", "5000", "--ev-list", f"{port + 1}", "--timeout", "1")
    assert s.returncode == 1
    assert "no verdict from the receiver within 1 s" in s.stderr


def test_more_than_256_mib_is_sent() -> None:
    """One draw of more than 2**28 random bytes overflows Python's generator; the
    sender draws its data in pieces and gets as far as waiting for the receiver."""
    rx, sx, port = addresses()
    s = send(rx, sx, port, "--bytes", str((1 << 28) + 5), "--ev-list", f"{port + 1}", "--timeout", "0.5")
    assert s.returncode == 1, s.stderr
    assert "no verdict from the receiver within 0.5 s" in s.stderr and "Traceback" not in s.stderr


def test_pseudo_random_data_is_one_stream() -> None:
    """What ``--bytes N --seed S`` sends is ``random.Random(S).randbytes(N)`` whatever
    the pieces it is drawn in; a piece that is not whole 32-bit words is refused."""
    from endpoints.cli import pseudo_random

    for n in (0, 3, 4096, 10_007):
        assert pseudo_random(9, n, chunk=1024) == random.Random(9).randbytes(n)
    assert pseudo_random(9, 10, chunk=1024) != random.Random(8).randbytes(10)
    with pytest.raises(ValueError, match="multiple of 4"):
        pseudo_random(9, 10, chunk=6)


@pytest.mark.parametrize("args, message", [
    (["--bytes", "10", "--ev-list", "x-y"], "--ev-list: 'x-y' is not an EV or a range"),
    (["--bytes", "10", "--ev-list", "70000"], "--ev-list: EV 70000 is not a UDP port"),
    (["--bytes", "10", "--in", "/nonexistent"], "give the transfer as --bytes N or --in FILE"),
    (["--bytes", "10"], "the EV set needs the two hosts"),
    (["--bytes", "10", "--evs", "300", "--src-host", "h1", "--dst-host", "h2"], "--evs 300: a NIC has 1..256 EVs"),
    (["--bytes", "10", "--src-host", "h1", "--dst-host", "h99"], "--src-host/--dst-host"),
    (["--bytes", "10", "--ev-list", "5000", "--window", "0"], "window 0 outside 1..65535"),
    (["--bytes", "10", "--ev-list", "5000", "--ev-mode", "sideways"], "--ev-mode 'sideways'"),
    (["--bytes", "10", "--ev-list", "5000", "--rate", "-5"], "pacing rate must be more than 0"),
    (["--bytes", "10", "--ev-list", "5000", "--rate", "inf"], "pacing rate must be more than 0 packets/s and finite"),
    (["--bytes", "10", "--ev-list", "5000", "--probe-interval", "0"], "--probe-interval 0: give a number of seconds more than 0"),
    (["--bytes", "10", "--ev-list", "5000", "--ack-every", "0"], "burst, ack_every, initial_window and min_window must be at least 1"),
    # more than 2**24 packets of --mtu: refused before the data is drawn
    (["--bytes", "99999999999999999999", "--ev-list", "5000"],
     "--bytes 99999999999999999999: a transfer is 0 to 16777216000 bytes (2**24 PSNs of --mtu 1000 bytes)"),
    (["--bytes", "10000000000000", "--ev-list", "5000"], "--bytes 10000000000000: a transfer is 0 to 16777216000 bytes"),
    (["--bytes", "-1", "--ev-list", "5000"], "--bytes -1: a transfer is 0 to 16777216000 bytes"),
    (["--bytes", "200000000000", "--ev-list", "5000", "--mtu", "9000"],
     "--bytes 200000000000: a transfer is 0 to 150994944000 bytes (2**24 PSNs of --mtu 9000 bytes)"),
    (["--bytes", "10", "--ev-list", "5000", "--port", "65536"], "--port 65536: give a UDP port, 1..65535"),
    (["--bytes", "10", "--ev-list", "5000", "--port", "-1"], "--port -1: give a UDP port, 1..65535"),
    (["--bytes", "10", "--ev-list", "5000", "--port", "0"], "--port 0: give a UDP port, 1..65535"),
    (["--bytes", "10", "--ev-list", "5000", "--source-port", "65536"], "--source-port 65536: give a UDP port, 0..65535"),
    (["--bytes", "10", "--ev-list", "5000", "--port", "99999999999999999999"], "--port 99999999999999999999: give"),
    (["--bytes", "10", "--ev-list", "5000", "--report", "/nonexistent/s.json"],
     "--report /nonexistent/s.json: no directory /nonexistent; create it or give another path"),
    (["--bytes", "10", "--ev-list", "5000", "--report", "/"], "--report /: is a directory; give a file name"),
    (["--bytes", "10", "--ev-list", "5000", "--report", ""], "--report .: is a directory; give a file name"),
    (["--bytes", "10", "--ev-list", "5000", "--linger", "inf"],
     "--linger inf: give a number of seconds from 0 to 86400 (a day)"),
    (["--bytes", "10", "--ev-list", "5000", "--linger", "1e30"], "--linger 1e+30: give a number of seconds from 0"),
    (["--bytes", "10", "--ev-list", "5000", "--linger", "-1"], "--linger -1: give a number of seconds from 0"),
    (["--bytes", "10", "--ev-list", "5000", "--timeout", "nan"],
     "--timeout nan: give a number of seconds more than 0 and at most 86400 (a day)"),
    (["--bytes", "10", "--ev-list", "5000", "--timeout", "-1"], "--timeout -1: give a number of seconds more than 0"),
    (["--bytes", "10", "--ev-list", "5000", "--timeout", "0"], "--timeout 0: give a number of seconds more than 0"),
    (["--bytes", "10", "--ev-list", "5000", "--cc-base-rtt", "inf"], "--cc-base-rtt inf: give a number of seconds"),
    (["--bytes", "10", "--ev-list", "5000", "--rto-min", "inf"], "--rto-min inf: give a number of seconds"),
    (["--bytes", "10", "--ev-list", "5000", "--peer-ack-delay", "-1"], "--peer-ack-delay -1: give a number of seconds from 0"),
    (["--bytes", "10", "--ev-list", "5000", "--cc-target-min", "-1"], "--cc-target-min -1: give a number of seconds from 0"),
    (["--bytes", "10", "--ev-list", "5000", "--retire-delay", "-1"], "--retire-delay -1: give a number of seconds from 0"),
    (["--bytes", "10", "--ev-list", "5000", "--retire-delay", "nan"], "--retire-delay nan: give a number of seconds"),
    (["--bytes", "10", "--ev-list", "5000", "--cc-target-min", "nan"], "--cc-target-min nan: give a number of seconds"),
    (["--bytes", "10", "--ev-list", "5000", "--cc-startup-delay", "-1"],
     "--cc-startup-delay -1: give a number of delay targets, 0 (no start-up) or more"),
    (["--bytes", "10", "--ev-list", "5000", "--cc-startup-delay", "nan"], "--cc-startup-delay nan: give a number"),
    (["--bytes", "10", "--ev-list", "5000", "--cc-startup-delay", "inf"], "--cc-startup-delay inf: give a number"),
    (["--bytes", "10", "--ev-list", "1-99999999999999999999"],
     "--ev-list: EV 99999999999999999999 is not a UDP port (0..65535)"),
    (["--bytes", "10", "--ev-list", "1-300000000"], "--ev-list: EV 300000000 is not a UDP port (0..65535)"),
    (["--bytes", "10", "--ev-list", "5-3"], "--ev-list: the range 5-3 is reversed; write 3-5"),
    (["--bytes", "10", "--ev-list", "5000", "--to", "foo"], "--to 'foo': give an IPv6 or IPv4 address"),
    (["--bytes", "10", "--ev-list", "5000", "--to", "256.1.1.1"], "--to '256.1.1.1': give an IPv6 or IPv4 address"),
    (["--bytes", "10", "--ev-list", "5000", "--to", "127.0.0.1:80"], "--to '127.0.0.1:80': give an IPv6 or IPv4"),
    (["--bytes", "10", "--ev-list", "5000", "--to", ""], "--to '': give an IPv6 or IPv4 address"),
    (["--bytes", "10", "--ev-list", "5000", "--bind", "foo"], "--bind 'foo': give an IPv6 or IPv4 address"),
])
def test_bad_options_are_one_line(args: list[str], message: str) -> None:
    s = send("127.0.0.1", "127.0.0.2", 4791, "--timeout", "1", *args, timeout=30)
    assert s.returncode == 1
    lines = s.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], s.stderr


@pytest.mark.parametrize("args, message", [
    (["--nack-delay", "-1"], "--nack-delay -1: give a number of seconds from 0 to 86400 (a day)"),
    (["--trim-dscp", "64"], "trim DSCP 64 outside 0..63"),
    (["--count", "0"], "--count must be at least 1"),
    (["--port", "65536"], "--port 65536: give a UDP port, 1..65535"),
    (["--port", "-1"], "--port -1: give a UDP port, 1..65535"),
    (["--port", "0"], "--port 0: give a UDP port, 1..65535"),
    (["--port", "99999999999999999999"], "--port 99999999999999999999: give a UDP port, 1..65535"),
    (["--timeout", "nan"], "--timeout nan: give a number of seconds more than 0 and at most 86400 (a day)"),
    (["--timeout", "-1"], "--timeout -1: give a number of seconds more than 0"),
    (["--timeout", "0"], "--timeout 0: give a number of seconds more than 0"),
    (["--linger", "-1"], "--linger -1: give a number of seconds from 0 to 86400"),
    (["--linger", "nan"], "--linger nan: give a number of seconds from 0 to 86400"),
    (["--nack-delay", "nan"], "--nack-delay nan: give a number of seconds from 0 to 86400"),
    (["--nack-delay", "inf"], "--nack-delay inf: give a number of seconds from 0 to 86400"),
    (["--ack-delay", "nan"], "--ack-delay nan: give a number of seconds from 0 to 86400"),
    (["--renack-interval", "inf"], "--renack-interval inf: give a number of seconds more than 0"),
    (["--max-bytes", "-1"], "--max-bytes -1: give 0 or more bytes"),
    (["--out", "/"], "--out /: is a directory; give a file name"),
    (["--out", "/nonexistent/out.bin"], "--out /nonexistent/out.bin: no directory /nonexistent; create it"),
    (["--report", "/"], "--report /: is a directory; give a file name"),
    (["--report", "/nonexistent/r.json"], "--report /nonexistent/r.json: no directory /nonexistent; create it"),
    (["--report", ""], "--report .: is a directory; give a file name"),
])
def test_bad_receiver_options_are_one_line(args: list[str], message: str) -> None:
    p = subprocess.run([str(BIN / "mrc-recv"), "--listen", "127.0.0.1", "--timeout", "1", *args],
                       capture_output=True, text=True, timeout=30)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], p.stderr


def test_not_enough_memory_for_the_data_is_one_line() -> None:
    """3 GB is within what the wire carries; with 2 GiB of address space the data
    cannot be allocated: one line, nothing sent."""
    rx, sx, port = addresses()

    def two_gib() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    s = send(rx, sx, port, "--bytes", "3000000000", "--ev-list", f"{port + 1}", "--timeout", "1",
             timeout=30, preexec_fn=two_gib)
    assert s.returncode == 1
    assert s.stderr.strip().splitlines() == ["error: not enough memory for 3000000000 bytes; send less"], s.stderr


def test_a_lost_out_directory_is_one_line_and_the_report_is_written(tmp_path: Path) -> None:
    """--out's directory exists at the start and is gone at the end: the verified
    transfer is still reported, and the write error is one line."""
    rx, sx, port = addresses()
    gone = tmp_path / "gone"
    gone.mkdir()
    recv = start_recv(rx, port, "--out", str(gone / "out.bin"), "--report", str(tmp_path / "r.json"),
                      "--timeout", "20")
    gone.rmdir()
    s = send(rx, sx, port, "--bytes", "20000", "--ev-list", f"{port + 1}-{port + 4}",
             "--timeout", "20")
    code, _, err = finish(recv)
    assert s.returncode == 0, s.stderr
    assert code == 1
    assert err.strip().splitlines() == [f"error: --out {gone / 'out.bin'}: No such file or directory; "
                                        "nothing written there"], err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["ok"] is True and [c["verdict"] for c in rep["connections"]] == ["verified"]


def test_a_lost_report_directory_is_one_line(tmp_path: Path) -> None:
    """The sender's --report directory is gone when the transfer ends: one line, exit 1.
    The directory goes once the sender's first OPEN shows it has passed its checks."""
    rx, sx, port = addresses()
    gone = tmp_path / "gone"
    gone.mkdir()
    stand_in = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stand_in.bind((rx, port))
    sender = subprocess.Popen([str(BIN / "mrc-send"), "--to", rx, "--bind", sx, "--port", str(port), "--bytes",
                               "20000", "--ev-list", f"{port + 1}-{port + 4}", "--timeout", "30",
                               "--report", str(gone / "s.json"), "-q"], stderr=subprocess.PIPE, text=True)
    try:
        assert select.select([stand_in], [], [], 20)[0], "no OPEN from the sender"
        assert stand_in.recv(2048)[0] == wire.OP_OPEN
    finally:
        stand_in.close()
    gone.rmdir()
    recv = start_recv(rx, port, "--timeout", "30")
    _, err = sender.communicate(timeout=60)
    assert finish(recv)[0] == 0
    assert sender.returncode == 1
    assert err.strip().splitlines() == [f"error: --report {gone / 's.json'}: No such file or directory; "
                                        "nothing written there"], err


def open_packet(ev: int, length: int, version: int = wire.VERSION) -> bytes:
    """An OPEN on EV ``ev``: the EV in BTH pkey, bytes 2-3 (docs/packet-formats.md)."""
    pkt = bytearray(wire.Open(ev, version, 0x123, 0, length, 1000, 128, bytes(32)).pack())
    pkt[2:4] = ev.to_bytes(2, "big")
    return bytes(pkt)


def test_an_open_beyond_memory_is_refused_and_the_receiver_carries_on(tmp_path: Path) -> None:
    """An OPEN for 10**15 bytes (within --max-bytes, beyond any host's memory) is
    refused with STATUS REFUSED "memory" and counted; a normal transfer follows."""
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--max-bytes", str(10**15), "--report", str(tmp_path / "r.json"),
                      "--timeout", "30")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as opener:
        opener.bind((sx, 0))  # the receiver answers the address and port an OPEN came from
        opener.settimeout(10)
        opener.sendto(open_packet(port + 1, 10**15), (rx, port))
        answer = opener.recv(2048)
        st = wire.Status.unpack(answer)
    assert int.from_bytes(answer[2:4], "big") == st.ev  # the answer's own EV is its BTH pkey
    assert (st.ev, st.sender_qp, st.state, st.reason) == (port + 1, 0x123, wire.STATE_REFUSED, wire.REFUSE_MEMORY)
    s = send(rx, sx, port, "--bytes", "20000", "--ev-list", f"{port + 1}-{port + 4}",
             "--timeout", "20")
    assert s.returncode == 0, s.stderr
    code, _, err = finish(recv)
    assert code == 0, err
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["refused"] == 1 and [c["verdict"] for c in rep["connections"]] == ["verified"]


def test_help() -> None:
    for cmd in ("mrc-send", "mrc-recv"):
        p = subprocess.run([str(BIN / cmd), "--help"], capture_output=True, text=True)
        assert p.returncode == 0 and "--report" in p.stdout


@pytest.mark.parametrize("cmd, args, message", [
    ("mrc-send", ["--to", "::1", "--bogus"], "error: No such option: --bogus"),
    ("mrc-send", ["--to"], "error: Option '--to' requires an argument."),
    ("mrc-recv", ["--listen", "::1", "--count", "x"], "error: Invalid value for '--count': "),
])
def test_a_usage_mistake_is_one_line(cmd: str, args: list[str], message: str) -> None:
    """What typer would frame in a panel is one ``error:`` line pointing at --help, exit 2."""
    p = subprocess.run([str(BIN / cmd), *args], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(message), p.stderr
    assert p.stderr.rstrip().endswith(f"(see {cmd} --help)"), p.stderr


def test_hostile_datagrams_to_a_running_receiver(tmp_path: Path) -> None:
    """Garbage, truncated headers (empty datagrams too) and writes to unknown QPs arrive at the receiver's
    socket during a transfer: counted, and the transfer still verifies."""
    from tests.dataplane.packets import BTH, RETH

    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--report", str(tmp_path / "r.json"), "--timeout", "30")
    sender = subprocess.Popen([str(BIN / "mrc-send"), "--to", rx, "--bind", sx, "--port", str(port), "--bytes",
                               "1000000", "--rate", "1000", "--ev-list", f"{port + 1}-{port + 8}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rogue = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rogue.bind((sx, 0))
    wrong_qp = bytes(BTH(opcode=0x0A, dest_qp=0x123456, psn=1) / RETH(vaddr=0x1000, dma_len=4) / b"evil")
    time.sleep(0.3)
    for _ in range(100):
        rogue.sendto(wrong_qp, (rx, port))
        rogue.sendto(wrong_qp[:20], (rx, port))
        rogue.sendto(bytes([0x0A]) + os.urandom(7), (rx, port))
        rogue.sendto(b"", (rx, port))
        rogue.sendto(b"\x0a\x00\x12", (rx, port))  # shorter than the EV's place in the BTH
    rogue.close()
    out, err = sender.communicate(timeout=60)
    assert sender.returncode == 0, err
    assert finish(recv)[0] == 0
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["dropped"].get("wrong_qp") == 100, rep["dropped"]
    assert rep["dropped"]["truncated"] == 400
    assert rep["connections"][0]["verdict"] == "verified"


def test_generated_evs(tmp_path: Path) -> None:
    """GENERATED EVs (plane << 13 | spine << 5 | entropy): each reaches the receiver
    as the EV of its packets."""
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--report", str(tmp_path / "r.json"), "--timeout", "30")
    s = send(rx, sx, port, "--bytes", "64000", "--planes", "4", "--evs", "8", "--ev-mode", "generated",
             "--src-host", "h1", "--dst-host", "h3", "--report", str(tmp_path / "s.json"))
    assert s.returncode == 0, s.stderr
    assert finish(recv)[0] == 0
    rep = json.loads((tmp_path / "s.json").read_text())
    assert all(e["ev"] >> 13 == e["plane"] and (e["ev"] >> 5) & 0xFF == e["spine"] and e["sent"] > 0
               for e in rep["per_ev"])
    (c,) = json.loads((tmp_path / "r.json").read_text())["connections"]
    assert sorted(int(ev) for ev in c["per_ev_packets"]) == sorted(e["ev"] for e in rep["per_ev"])


def test_ev_0_is_an_ev_like_any_other(tmp_path: Path) -> None:
    """EV 0 (a value no UDP source port could carry) is sent, counted and answered."""
    rx, sx, port = addresses()
    recv = start_recv(rx, port, "--report", str(tmp_path / "r.json"), "--timeout", "30")
    s = send(rx, sx, port, "--bytes", "64000", "--ev-list", f"0,{port + 1}-{port + 3}", "--report",
             str(tmp_path / "s.json"))
    assert s.returncode == 0, s.stderr
    assert finish(recv)[0] == 0
    rep = json.loads((tmp_path / "s.json").read_text())
    assert rep["per_ev"][0]["ev"] == 0 and rep["per_ev"][0]["acked"] > 0
    (c,) = json.loads((tmp_path / "r.json").read_text())["connections"]
    assert c["per_ev_packets"]["0"] == rep["per_ev"][0]["sent"]


def test_a_corrupted_byte_fails_both_sides(tmp_path: Path) -> None:
    """A relay between the two flips one payload byte of one data packet (a broken
    middlebox that fixes the checksum): the receiver's SHA-256 differs, both exit 1."""
    import threading

    rx, sx, port = addresses()
    relay = rx.rsplit(".", 1)[0] + ".3"
    evs = list(range(port + 1, port + 5))
    listen = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the sender's side
    listen.bind((relay, port))
    upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # the receiver's side
    upstream.bind((relay, 0))
    stop = threading.Event()
    flipped = []

    def forward() -> None:
        seen = 0
        sender_addr = None
        while not stop.is_set():
            ready, _, _ = select.select([listen, upstream], [], [], 0.2)
            if listen in ready:
                data, sender_addr = listen.recvfrom(4096)
                if data[0] == 0x0A:
                    seen += 1
                    if seen == 10:
                        data = data[:500] + bytes([data[500] ^ 0x01]) + data[501:]
                        flipped.append(int.from_bytes(data[2:4], "big"))
                upstream.sendto(data, (rx, port))
            if upstream in ready:
                data = upstream.recv(4096)
                if sender_addr is not None:
                    listen.sendto(data, sender_addr)

    thread = threading.Thread(target=forward, daemon=True)
    thread.start()
    try:
        recv = start_recv(rx, port, "--report", str(tmp_path / "r.json"), "--timeout", "20")
        s = send(relay, sx, port, "--bytes", "50000", "--ev-list", f"{evs[0]}-{evs[-1]}",
                 "--timeout", "20")
        code, _, err = finish(recv)
    finally:
        stop.set()
        thread.join()
        listen.close()
        upstream.close()
    assert flipped and flipped[0] in evs
    assert s.returncode == 1 and "SHA-256" in s.stderr.strip().splitlines()[-1]
    assert code == 1 and "SHA-256 different from the sender's" in err
    (c,) = json.loads((tmp_path / "r.json").read_text())["connections"]
    assert c["verdict"] == "corrupt" and c["received_bytes"] == 50000


def test_the_sender_may_start_first(tmp_path: Path) -> None:
    """OPENs sent before the receiver listens are lost (port unreachable): the sender
    repeats them every RTO, and the transfer then loses nothing."""
    rx, sx, port = addresses()
    ev0 = RNG.randrange(30000, 40000)
    sender = subprocess.Popen([str(BIN / "mrc-send"), "--to", rx, "--bind", sx, "--port", str(port), "--bytes",
                               "500000", "--ev-list", f"{ev0}-{ev0 + 31}", "--report",
                               str(tmp_path / "s.json"), "-q"], stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    recv = start_recv(rx, port, "--timeout", "30")
    _, err = sender.communicate(timeout=60)
    assert sender.returncode == 0, err
    assert finish(recv)[0] == 0
    rep = json.loads((tmp_path / "s.json").read_text())
    assert rep["control"]["open_sent"] > 4 and "tx_errors" not in rep["io"]
    assert rep["retransmissions"]["nack"] == 0 and rep["evs_retired"] <= rep["retransmissions"]["timeout"]
