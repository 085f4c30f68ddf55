"""A private network namespace with veth pairs, for tests that need real interfaces.

Everything is created inside one namespace named ``p4t-...`` (interfaces ``p4t...``),
so deleting the namespace removes it all and ``make clean`` finds leftovers by name.
IPv6 is disabled in the namespace so the kernel sends nothing of its own (router
solicitations, MLD) on the veths: every frame a test sees is one it caused.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid

from p4target.ports.linux_net import open_interface_socket


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


class NetLab:
    def __init__(self, tag: str) -> None:
        self.ns = f"p4t-{tag}-{uuid.uuid4().hex[:6]}"
        self.socks: list[socket.socket] = []
        self.hosts: list[str] = []

    def __enter__(self) -> "NetLab":
        ip("netns", "add", self.ns)
        try:
            self.sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            self.sh("sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
            ip("-n", self.ns, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for s in self.socks:
            s.close()
        self.socks.clear()
        for h in self.hosts:
            ip("netns", "del", h, check=False)
        ip("netns", "del", self.ns, check=False)

    def sh(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", self.ns, *cmd], check=check,
                              capture_output=True, text=True)

    def veth(self, a: str, b: str) -> None:
        ip("-n", self.ns, "link", "add", a, "type", "veth", "peer", "name", b)
        ip("-n", self.ns, "link", "set", a, "up")
        ip("-n", self.ns, "link", "set", b, "up")

    def host(self, tag: str, ifname: str, addr: str, offloads: bool = True) -> str:
        """Move ``ifname`` into a host namespace of its own with IPv6 ``addr`` (/64,
        no DAD); the host's kernel stack then sends real, offloaded traffic."""
        h = f"{self.ns}-{tag}"
        ip("netns", "add", h)
        self.hosts.append(h)
        ip("-n", self.ns, "link", "set", ifname, "netns", h)
        ip("-n", h, "link", "set", "lo", "up")
        ip("-n", h, "link", "set", ifname, "up")
        ip("-n", h, "addr", "add", f"{addr}/64", "dev", ifname, "nodad")
        if not offloads:
            subprocess.run(["ip", "netns", "exec", h, "ethtool", "-K", ifname, "tso", "off",
                            "gso", "off"], check=True, capture_output=True)
        return h

    def link(self, name: str, state: str) -> None:
        ip("-n", self.ns, "link", "set", name, state)

    def socket(self, ifname: str) -> socket.socket:
        """A raw socket on ``ifname`` (frames the test sends and receives)."""
        s = open_interface_socket(ifname, self.ns)
        self.socks.append(s)
        return s

    def rx_packets(self, ifname: str) -> int:
        out = self.sh("cat", f"/sys/class/net/{ifname}/statistics/rx_packets").stdout
        return int(out.strip())


def recv_frames(sock: socket.socket, timeout: float = 1.0, want: int | None = None) -> list[bytes]:
    """Frames arriving on ``sock`` within ``timeout`` (sooner once ``want`` arrived)."""
    frames: list[bytes] = []
    end = time.monotonic() + timeout
    while want is None or len(frames) < want:
        left = end - time.monotonic()
        if left <= 0:
            break
        sock.settimeout(left)
        try:
            data, addr = sock.recvfrom(65535)
        except (socket.timeout, TimeoutError):
            break
        if addr[2] == 4:  # PACKET_OUTGOING: our own transmissions
            continue
        frames.append(data)
    return frames


def wait_for(cond, timeout: float = 3.0, step: float = 0.01) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def is_root() -> bool:
    return os.geteuid() == 0
