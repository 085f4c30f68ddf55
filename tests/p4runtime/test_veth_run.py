"""``p4target run`` on veths, programmed over P4Runtime: a frame follows the entry.

A private namespace ``p4t-rt-*`` holds two veth pairs; the switch process owns one
end of each (ports 1 and 2), the test sends and sniffs on the other ends. The
controller (this test, raw grpc) pushes rt_all.p4, writes an exact entry to port 2,
and the frame sent into port 1 comes out of port 2; after DELETE it does not.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from p4target.ports.netio import open_interface_socket
from tests.p4runtime.conftest import RT_ALL, tframe
from tests.p4runtime.p4rt_client import Names, RawClient, ins

REPO = Path(__file__).resolve().parents[2]
DST = 0x0A0000000001


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def stop(proc: subprocess.Popen | None, timeout: float = 15) -> None:
    """Terminate ``proc`` if it still runs; kill it after ``timeout`` seconds."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def received(sock: socket.socket, want: bytes, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            data, addr = sock.recvfrom(65535)
        except (socket.timeout, TimeoutError):
            return False
        if addr[2] != 4 and data[:len(want)] == want:  # 4: PACKET_OUTGOING, our own
            return True
    return False


@pytest.mark.root
def test_frame_follows_an_entry_written_over_p4runtime(rt_config) -> None:
    ns = f"p4t-rt-{uuid.uuid4().hex[:6]}"
    ip("netns", "add", ns)
    proc = None
    socks: list[socket.socket] = []
    try:
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"], check=True)
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], check=True)
        for a, b in (("p4tq1", "p4tr1"), ("p4tq2", "p4tr2")):
            ip("-n", ns, "link", "add", a, "type", "veth", "peer", "name", b)
            ip("-n", ns, "link", "set", a, "up")
            ip("-n", ns, "link", "set", b, "up")
        proc = subprocess.Popen(
            [sys.executable, "-m", "p4target", "run", "--no-p4", "--netns", ns, "-i", "1@p4tq1", "-i", "2@p4tq2",
             "--cpu-port", "255", "--device-id", "1", "--grpc-addr", "127.0.0.1:0", "--log-level", "info"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        addr = None
        for _ in range(200):
            line = proc.stderr.readline()
            m = re.search(r"P4Runtime on ([0-9.]+:\d+)", line)
            if m:
                addr = m.group(1)
                break
            if not line and proc.poll() is not None:
                break
        assert addr, f"p4target run did not start: {proc.stderr.read() if proc.poll() is not None else ''}"
        port = int(addr.rsplit(":", 1)[1])
        c = RawClient(port, device_id=1)
        try:
            c.arbitrate(1)
            c.set_pipeline(rt_config[0], rt_config[1])
            names = Names(rt_config[0])
            tx = open_interface_socket("p4tr1", ns)
            rx = open_interface_socket("p4tr2", ns)
            socks += [tx, rx]
            frame = tframe(dst=DST)
            c.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}, "fwd", port=2)))
            tx.send(frame)
            assert received(rx, frame[:14], 3.0), "the frame did not come out of port 2"
            c.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": DST}), "DELETE"))
            tx.send(frame)
            assert not received(rx, frame[:14], 1.0), "the frame still came out after DELETE"
        finally:
            c.close()
    finally:
        for s in socks:
            s.close()
        stop(proc, 10)
        ip("netns", "del", ns, check=False)
    assert RT_ALL.exists()
