"""``p4target run`` as a process inside a namespace, forwarding between veths."""

from __future__ import annotations

import math
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scapy.layers.inet6 import IPv6, UDP
from scapy.layers.l2 import Ether

from p4target.ports.pcap import read_pcap

from p4t_netlab import NetLab, recv_frames, wait_for

REPO = Path(__file__).resolve().parents[3]
L3 = REPO / "tests" / "target" / "stf" / "p4" / "l3_acl.p4"

ENTRIES = """\
add ipv6_lpm hdr.ipv6.dst_addr:0xfcbbbb00010000000000000000000000/48 route(port:3, dmac:0x0000000000b3)
add ipv6_lpm hdr.ipv6.dst_addr:0xfcbb0000000000000000000000000000/16 route(port:2, dmac:0x0000000000b2)
add acl 5 hdr.udp.dst_port:0x0009 deny()
"""


def frame(dst: str, dport: int = 4791) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:aa")
                 / IPv6(src="fd00::1", dst=dst, hlim=64) / UDP(sport=1234, dport=dport)
                 / b"0123456789")


@pytest.fixture
def lab():
    with NetLab("run") as lab:
        for x in "abc":
            lab.veth(f"p4t{x}0", f"p4t{x}1")
        yield lab


def start(lab: NetLab, tmp: Path, *extra: str) -> subprocess.Popen:
    (tmp / "entries.stf").write_text(ENTRIES)
    cmd = ["ip", "netns", "exec", lab.ns, sys.executable, "-m", "p4target", "run", str(L3),
           "-i", "1@p4ta1", "-i", "2@p4tb1", "-i", "3@p4tc1", "--no-grpc",
           "--commands", str(tmp / "entries.stf"), "--pid-file", str(tmp / "sw.pid"),
           "--device-id", "4", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


SO_TIMESTAMPNS = 35  # asm-generic/socket.h (SO_TIMESTAMPNS_OLD): arrival times as timespec


def recv_stamps(sock: socket.socket, timeout: float, want: int) -> list[float]:
    """Kernel arrival times of up to ``want`` frames (not our own) on ``sock``."""
    stamps: list[float] = []
    end = time.monotonic() + timeout
    while len(stamps) < want and time.monotonic() < end:
        sock.settimeout(max(0.001, end - time.monotonic()))
        try:
            _, anc, _, addr = sock.recvmsg(65535, socket.CMSG_SPACE(16))
        except (socket.timeout, TimeoutError):
            break
        if addr[2] == 4:  # PACKET_OUTGOING
            continue
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", data[:16])
                stamps.append(sec + nsec / 1e9)
    return stamps


def stamped_on_arrival(a: socket.socket, b: socket.socket) -> bool:
    """One frame from ``a`` to ``b`` (through the switch's unlimited port 2) carries
    its arrival time. The kernel turns receive timestamps on a moment after the first
    socket asks (from a work queue); until then a frame is stamped when it is read,
    which made a paced port's first departure look late and its spread short."""
    a.send(frame("fcbb:1::1"))
    time.sleep(0.02)
    read_at = time.time()
    stamps = recv_stamps(b, timeout=0.5, want=1)
    recv_frames(b, timeout=0.05)  # a late one must not join the measured burst
    return bool(stamps) and stamps[0] < read_at


def stop(p: subprocess.Popen) -> tuple[int, str]:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return p.returncode, err


@pytest.mark.root
@pytest.mark.parametrize("io", ["rings", "no-rings"])
def test_run_forwards_and_stops_cleanly_on_sigterm(lab, tmp_path, io):
    extra = ["--no-rings"] if io == "no-rings" else []
    p = start(lab, tmp_path, "--pcap", str(tmp_path / "pcap"), "--log-level", "info", *extra)
    try:
        assert wait_for(lambda: (tmp_path / "sw.pid").exists() or p.poll() is not None, 60)
        assert p.poll() is None, p.communicate()[1]
        assert int((tmp_path / "sw.pid").read_text()) > 0
        a, b, c = lab.socket("p4ta0"), lab.socket("p4tb0"), lab.socket("p4tc0")
        a.send(frame("fcbb:bb00:100::1"))
        got = recv_frames(c, timeout=3.0, want=1)
        assert len(got) == 1
        out = Ether(got[0])
        assert out.dst == "00:00:00:00:00:b3" and out.src == "02:00:00:00:00:aa"
        assert out[IPv6].hlim == 63 and bytes(out[UDP].payload) == b"0123456789"
        a.send(frame("fcbb:1::1"))
        assert len(recv_frames(b, timeout=3.0, want=1)) == 1
        # denied by the ACL, and no route: nothing comes out anywhere
        a.send(frame("fcbb:1::1", dport=9))
        a.send(frame("2001:db8::1"))
        assert recv_frames(b, timeout=0.5) == [] and recv_frames(c, timeout=0.2) == []
    finally:
        code, err = stop(p)
    assert code == 0, err
    assert "Traceback" not in err
    assert "device 4" in err
    how = ("(one system call per frame)" if io == "no-rings"
           else "(PACKET_MMAP rings, 4096 receive slots)")
    assert f"1@p4ta1 {how}" in err and f"3@p4tc1 {how}" in err
    assert "port 3: rx 0 tx 1 tx_errors 0 rx_dropped 0" in err
    assert not (tmp_path / "sw.pid").exists()
    ins = read_pcap(tmp_path / "pcap" / "p4ta1_in.pcap")
    outs = read_pcap(tmp_path / "pcap" / "p4tc1_out.pcap")
    assert len(ins) == 4 and len(outs) == 1


@pytest.mark.root
@pytest.mark.parametrize("slots", [None, "64", "1=64"])
def test_rx_ring_frames_is_the_burst_a_stopped_switch_holds(lab, tmp_path, slots):
    """A burst of 1,000 frames arrives while the switch is stopped (SIGSTOP): its
    receive ring holds what it has slots for, the kernel drops and counts the rest,
    and once it runs again the switch forwards what the ring held. With the default
    4,096 slots the whole burst comes out; with --rx-ring-frames 64 (every port) or
    1=64 (port 1 only), the first 64."""
    extra = [] if slots is None else ["--rx-ring-frames", slots]
    p = start(lab, tmp_path, "--log-level", "info", *extra)
    burst = [frame("fcbb:bb00:100::1") + i.to_bytes(4, "big") + bytes(900) for i in range(1000)]
    try:
        assert wait_for(lambda: (tmp_path / "sw.pid").exists() or p.poll() is not None, 60)
        assert p.poll() is None, p.communicate()[1]
        from p4target.ports.linux_net import open_interface_socket

        a = lab.socket("p4ta0")
        c = open_interface_socket("p4tc0", lab.ns, rcvbuf=32 << 20)
        lab.socks.append(c)
        pid = int((tmp_path / "sw.pid").read_text())
        os.kill(pid, signal.SIGSTOP)
        try:
            for f in burst:
                a.send(f)
        finally:
            os.kill(pid, signal.SIGCONT)
        got = recv_frames(c, timeout=3.0, want=len(burst))
        assert recv_frames(c, timeout=0.3) == []
    finally:
        code, err = stop(p)
    assert code == 0, err
    held = 1000 if slots is None else 64
    assert f"1@p4ta1 (PACKET_MMAP rings, {4096 if slots is None else 64} receive slots)" in err
    others = 64 if slots == "64" else 4096  # a port=N gives that port its ring alone
    assert f"3@p4tc1 (PACKET_MMAP rings, {others} receive slots)" in err
    # in order, the first ones: routed to port 3 with the hop limit one less
    assert [Ether(f)[IPv6].hlim for f in got] == [63] * held
    assert [f[-904:-900] for f in got] == [i.to_bytes(4, "big") for i in range(held)]
    assert f"port 1: rx {held} tx 0 tx_errors 0 rx_dropped {1000 - held}" in err


@pytest.mark.root
def test_sigint_also_stops(lab, tmp_path):
    p = start(lab, tmp_path)
    try:
        assert wait_for(lambda: (tmp_path / "sw.pid").exists() or p.poll() is not None, 60)
        os.kill(int((tmp_path / "sw.pid").read_text()), signal.SIGINT)
        p.wait(30)  # a hang guard, not a speed target
    finally:
        code, err = stop(p)
    assert code == 0, err


@pytest.mark.root
def test_missing_interface_is_one_line_exit_1(lab, tmp_path):
    r = subprocess.run(["ip", "netns", "exec", lab.ns, sys.executable, "-m", "p4target", "run",
                        str(L3), "-i", "1@p4ta1", "-i", "2@p4tnope", "--no-grpc"],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == ["p4target: error: port 2: interface 'p4tnope' does not exist; "
                     "create it first or fix -i PORT@IFACE"]


@pytest.mark.root
def test_commands_file_with_a_packet_is_refused(lab, tmp_path):
    (tmp_path / "bad.stf").write_text("add acl 5 hdr.udp.dst_port:0x0009 deny()\npacket 1 00\n")
    r = subprocess.run(["ip", "netns", "exec", lab.ns, sys.executable, "-m", "p4target", "run",
                        str(L3), "-i", "1@p4ta1", "--no-grpc", "--commands",
                        str(tmp_path / "bad.stf")],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.strip() == (f"p4target: {tmp_path}/bad.stf:2:1: error: 'packet' is not a "
                                "control command; --commands takes table, multicast, "
                                "mirroring, counter, register and meter commands")


@pytest.mark.root
def test_queue_rate_paces_a_port_and_queue_depth_drops_the_rest(lab, tmp_path):
    """--queue-rate 3=50 lets one packet out of port 3 every 20 ms; --queue-depth 3=10
    holds 10 behind it: of a burst of 30 only about 11 come out, spread over >= 120 ms (the first 4 back to back: the port's token bucket).
    Port 2 has neither and passes a burst of 30 whole, sent alongside: its 29 gaps
    (kernel arrival times, like port 3's) take less than port 3's 9 paced ones, where
    the same pacing would make them take three times as long."""
    p = start(lab, tmp_path, "--queue-rate", "3=50", "--queue-depth", "3=10")
    try:
        assert wait_for(lambda: (tmp_path / "sw.pid").exists() or p.poll() is not None, 60)
        assert p.poll() is None, p.communicate()[1]
        a, b, c = lab.socket("p4ta0"), lab.socket("p4tb0"), lab.socket("p4tc0")
        # the kernel's arrival times: the test's own delays in reading (a loaded
        # machine) do not shorten the spread
        for sock in (b, c):
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        assert wait_for(lambda: stamped_on_arrival(a, b), 5), "frames are never stamped on arrival"
        for _ in range(30):
            a.send(frame("fcbb:bb00:100::1"))  # to port 3
            a.send(frame("fcbb:1::1"))  # to port 2, no limit
        stamps = recv_stamps(c, timeout=2.0, want=10)
        unpaced = recv_stamps(b, timeout=2.0, want=30)
        rest = recv_frames(c, timeout=1.0)
        assert len(stamps) == 10
        spread = stamps[9] - stamps[0]
        assert spread >= 0.115, spread  # 4 back to back (the bucket), then 6 departures 20 ms apart
        assert len(unpaced) == 30, "the unlimited port drops frames"
        # 10 queued + the one leaving, plus one more for every 20 ms the burst took to
        # arrive (its span at the unlimited port: a loaded machine sends it slower), +1
        # for a departure straddling either end, +3 that the port's token bucket (4) lets
        # out back to back before the queue holds anything
        burst = unpaced[-1] - unpaced[0]
        assert 10 <= 10 + len(rest) <= 11 + math.ceil(burst / 0.020) + 1 + 3, (len(rest), burst)
        assert unpaced[-1] - unpaced[0] < spread, ("the unlimited port is paced", unpaced[-1] - unpaced[0], spread)
    finally:
        code, err = stop(p)
    assert code == 0, err


@pytest.mark.parametrize("argv,what", [
    (["--queue-rate", "3=100"], "port 3 is not an interface port"),
    (["--queue-rate", "1=0"], "more than 0 packets/s"),
    (["--queue-depth", "1=-1"], "0 packets or more"),
    (["--queue-rate", "1"], "PORT=RATE"),
    (["--rx-ring-frames", "63"], "--rx-ring-frames: '63': give a whole number of receive ring slots"),
    (["--rx-ring-frames", "65537"], "from 64 to 65536"),
    (["--rx-ring-frames", "many"], "from 64 to 65536"),
    (["--rx-ring-frames", "1e3"], "from 64 to 65536"),
    (["--rx-ring-frames", "256", "--no-rings"], "--rx-ring-frames sizes the receive rings; drop it"),
    (["--rx-ring-frames", "1=256", "--no-rings"], "--rx-ring-frames sizes the receive rings; drop it"),
    (["--rx-ring-frames", "3=256"], "--rx-ring-frames 3=256: port 3 is not an interface port"),
    (["--rx-ring-frames", "1=63"], "'1=63': give a whole number of receive ring slots"),
    (["--rx-ring-frames", "x=256"], "'x=256': give N (slots for every port) or PORT=N"),
    (["--rx-ring-frames=-1=256"], "'-1=256': give N (slots for every port) or PORT=N"),
    (["--rx-ring-frames", "1=256", "--rx-ring-frames", "1=512"], "port 1 is given twice"),
    (["--rx-ring-frames", "256", "--rx-ring-frames", "512"], "--rx-ring-frames N is given twice"),
])
def test_bad_queue_options_are_usage_errors(argv, what, capsys):
    from p4target.cli import main

    try:
        code = main(["run", str(L3), "-i", "1@p4ta1", *argv])
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert what in capsys.readouterr().err
