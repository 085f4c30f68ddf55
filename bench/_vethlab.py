"""Shared measuring code for the veth benchmarks (veth_ceiling.py, target_veth.py).

The lab is one private network namespace (``p4t-bench-...``) with two veth pairs:

    sender --p4tsrc==p4tin--> [forwarder] --p4tout==p4tsnk--> (kernel counts)

A sender process blasts one frame on ``p4tsrc`` as fast as Python can; a forwarder
(a plain-Python raw-socket loop, or ``p4target run``) moves frames from ``p4tin`` to
``p4tout``; the throughput is what arrives on ``p4tsnk``, read from the kernel's
``rx_packets`` counter so counting costs nothing. Everything is removed at the end,
also on errors and Ctrl-C. Run as root.

The forwarder's CPU time (user + system, from /proc) over the measured interval is
reported per delivered packet too, and how much of it was system time: on a shared machine the packets/s follow the
share of a core the forwarder gets, the CPU time per packet much less so.

``python bench/_vethlab.py send IFACE SECONDS`` and ``... forward IN OUT`` are the
sender and the plain forwarder, started inside the namespace by the lab.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23


def bench_frame(size: int = 96) -> bytes:
    """Ethernet/IPv6/UDP to fcbb:bb00:100::1 (what the benchmark program routes)."""
    from scapy.layers.inet6 import IPv6, UDP
    from scapy.layers.l2 import Ether

    pkt = (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
           / IPv6(src="fd00:0:1:1::1", dst="fcbb:bb00:100::1", hlim=64)
           / UDP(sport=49152, dport=4791))
    pad = max(0, size - len(pkt))
    return bytes(pkt / (b"\0" * pad))


def _raw(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass
    s.setsockopt(socket.SOL_SOCKET, 33, 4 << 20)  # SO_RCVBUFFORCE
    s.bind((ifname, ETH_P_ALL))
    return s


def send_loop(ifname: str, seconds: float, frame_hex: str) -> None:
    """Send one frame over and over for ``seconds``."""
    s = _raw(ifname)
    frame = bytes.fromhex(frame_hex)
    send = s.send
    if seconds <= 0:
        send(frame)
        return
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(1000):
            try:
                send(frame)
            except OSError:  # socket buffer full: the receiver is behind
                pass


def forward_loop(in_if: str, out_if: str) -> None:
    """The plain-Python ceiling: read a frame, write it, nothing else."""
    rx, tx = _raw(in_if), _raw(out_if)
    recv, send = rx.recv, tx.send
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        send(recv(65535))


@dataclass
class Measurement:
    name: str
    pps: float
    seconds: float
    delivered: int
    cpu_seconds: float | None = None  # the forwarder's user + system time meanwhile
    system_seconds: float | None = None  # of which system time (the kernel's work for it)

    @property
    def cpu_us(self) -> float | None:
        """The forwarder's CPU time per delivered packet, in microseconds."""
        if self.cpu_seconds is None or not self.delivered:
            return None
        return self.cpu_seconds / self.delivered * 1e6

    def line(self) -> str:
        cpu = "" if self.cpu_us is None else (
            f", {self.cpu_us:.2f} us CPU/packet at {self.cpu_seconds / self.seconds:.2f} of a core")
        if self.cpu_us is not None and self.system_seconds is not None:
            cpu += f" ({self.system_seconds / self.delivered * 1e6:.2f} us of it system time)"
        return (f"{self.name:<40} {self.pps:>9,.0f} packets/s  "
                f"({self.delivered} in {self.seconds:.1f} s{cpu})")


def cpu_seconds(pid: int) -> tuple[float, float] | None:
    """User + system and system CPU time of process ``pid`` so far (None if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    hz = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / hz, int(fields[12]) / hz


class VethLab:
    """The namespace and veths above; a context manager that always cleans up."""

    def __init__(self) -> None:
        self.ns = f"p4t-bench-{uuid.uuid4().hex[:6]}"
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "VethLab":
        self._ip("netns", "add", self.ns)
        try:
            self.exec_quiet("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            self.exec_quiet("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
            for a, b in (("p4tsrc", "p4tin"), ("p4tout", "p4tsnk")):
                self._ip("-n", self.ns, "link", "add", a, "type", "veth", "peer", "name", b)
                for dev in (a, b):
                    self._ip("-n", self.ns, "link", "set", dev, "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for p in self.procs:
            stop(p)
        self.procs.clear()
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    def exec_quiet(self, *cmd: str) -> None:
        subprocess.run(["ip", "netns", "exec", self.ns, *cmd], check=True, capture_output=True)

    def spawn(self, *cmd: str, log: Path | None = None) -> subprocess.Popen:
        out = open(log, "wb") if log else subprocess.DEVNULL
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], cwd=REPO,
                             stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def rx_packets(self, ifname: str = "p4tsnk") -> int:
        out = subprocess.run(["ip", "netns", "exec", self.ns, "cat",
                              f"/sys/class/net/{ifname}/statistics/rx_packets"],
                             check=True, capture_output=True, text=True).stdout
        return int(out)

    def wait_forwarding(self, timeout: float = 20.0, frame_bytes: bytes | None = None) -> bool:
        """Send single frames until one comes out (the forwarder is up)."""
        frame = (frame_bytes or bench_frame()).hex()
        end = time.monotonic() + timeout
        base = self.rx_packets()
        while time.monotonic() < end:
            self.exec_quiet(PYTHON, __file__, "send", "p4tsrc", "0", frame)
            time.sleep(0.2)
            if self.rx_packets() > base:
                return True
        return False

    def measure(self, name: str, seconds: float = 5.0, warmup: float = 1.0,
                frame_bytes: bytes | None = None,
                forwarder: subprocess.Popen | None = None) -> Measurement:
        """Blast frames (default: bench_frame()) for warmup+seconds; the delivery rate
        over ``seconds`` (and the ``forwarder`` process's CPU time meanwhile; ``ip
        netns exec`` runs the command in its own process, so its pid is the
        forwarder's)."""
        sender = self.spawn(PYTHON, __file__, "send", "p4tsrc", str(warmup + seconds + 1),
                            (frame_bytes or bench_frame()).hex())
        pid = forwarder.pid if forwarder is not None else None
        try:
            time.sleep(warmup)
            u0 = cpu_seconds(pid) if pid else None
            c0, t0 = self.rx_packets(), time.monotonic()
            time.sleep(seconds)
            c1, t1 = self.rx_packets(), time.monotonic()
            u1 = cpu_seconds(pid) if pid else None
        finally:
            stop(sender)
            if sender in self.procs:
                self.procs.remove(sender)
        cpu = sys_cpu = None
        if u0 is not None and u1 is not None:
            cpu, sys_cpu = u1[0] - u0[0], u1[1] - u0[1]
        return Measurement(name, (c1 - c0) / (t1 - t0), t1 - t0, c1 - c0, cpu, sys_cpu)

    def run_plain_forwarder(self) -> subprocess.Popen:
        return self.spawn(PYTHON, __file__, "forward", "p4tin", "p4tout")

    def measure_ceiling(self, seconds: float = 5.0) -> Measurement:
        fwd = self.run_plain_forwarder()
        try:
            if not self.wait_forwarding():
                raise RuntimeError("the plain forwarder did not forward")
            return self.measure("plain Python raw-socket forwarder", seconds, forwarder=fwd)
        finally:
            stop(fwd)
            self.procs.remove(fwd)


def stop(p: subprocess.Popen) -> None:
    """Stop a process started in its own session: SIGTERM, then SIGKILL."""
    if p.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def require_root() -> bool:
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces and veths)")
        return False
    return True


if __name__ == "__main__":
    if sys.argv[1] == "send":
        send_loop(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "forward":
        forward_loop(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(f"unknown mode {sys.argv[1]!r}")
