"""Send one UDP datagram and one TCP segment from a Mininet host to another, and read
the bytes that arrive at the receiving host's interface.

Why: a host's packets must leave with their checksums complete whatever the P4 target
(topologies/hosts.py); only the bytes on the receiving host's wire show it. A packet
socket in the receiving host records every frame from the address of the sender (as
the interface got it, before the kernel checks anything); the test then checks the
checksums with scapy, which computes them itself.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

PORT = 9999

# Runs inside the receiving host: a packet socket on its interface, a UDP socket and a
# TCP listener on PORT; prints "ready", then one JSON line: the frames from the sender
# (hex) and what the sockets delivered.
_RECEIVER = r"""
import json, select, socket, sys, time
intf, src, port = sys.argv[1], socket.inet_pton(socket.AF_INET6, sys.argv[2]), int(sys.argv[3])
raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
raw.bind((intf, 0))
udp = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); udp.bind(("::", port))
tcp = socket.socket(socket.AF_INET6, socket.SOCK_STREAM); tcp.bind(("::", port)); tcp.listen(1)
print("ready", flush=True)
frames, got_udp, got_tcp, conn = [], None, b"", None
deadline = time.monotonic() + 8
while time.monotonic() < deadline and not (got_udp is not None and got_tcp.endswith(b"END")):
    socks = [raw, udp, tcp] + ([conn] if conn else [])
    for s in select.select(socks, [], [], 0.2)[0]:
        if s is raw:
            f = raw.recv(65535)
            if len(f) > 54 and f[12:14] == b"\x86\xdd" and f[22:38] == src:
                frames.append(f.hex())
        elif s is udp:
            got_udp = udp.recv(65535).decode()
        elif s is tcp:
            conn, _ = tcp.accept()
        else:
            got_tcp += conn.recv(65535)
print(json.dumps({"frames": frames, "udp": got_udp, "tcp": got_tcp.decode()}), flush=True)
"""

_SENDER = r"""
import socket, sys
dst, port = sys.argv[1], int(sys.argv[2])
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.sendto(b"udp checksum probe " * 20, (dst, port))
t = socket.create_connection((dst, port), timeout=5); t.sendall(b"tcp checksum probe " * 20 + b"END"); t.close()
"""


def exchange(src: Any, dst: Any, src_addr: str, dst_addr: str, timeout: float = 20.0) -> dict[str, Any]:
    """Send a UDP datagram and a TCP stream from Mininet host ``src`` to ``dst``; return
    the frames from ``src_addr`` that arrived at ``dst``'s interface (bytes) and what
    ``dst``'s sockets received (``udp``, ``tcp``: text, None/'' when nothing)."""
    recv = dst.popen([sys.executable, "-c", _RECEIVER, dst.defaultIntf().name, src_addr, str(PORT)])
    try:
        line = recv.stdout.readline().decode().strip()
        if line != "ready":
            raise RuntimeError(f"capture in {dst.name} did not start: {line!r} {recv.stderr.read().decode()}")
        time.sleep(0.1)
        send = src.popen([sys.executable, "-c", _SENDER, dst_addr, str(PORT)])
        send.wait(timeout=timeout)
        out, err = recv.communicate(timeout=timeout)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    if recv.returncode != 0:
        raise RuntimeError(f"capture in {dst.name} failed: {err.decode()}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result["frames"] = [bytes.fromhex(f) for f in result["frames"]]
    return result


def checksums_ok(frame: bytes) -> tuple[str, bool]:
    """The transport of an IPv6 frame (``UDP``/``TCP``) and whether its checksum is the
    one scapy computes over the same bytes."""
    from scapy.layers.inet import TCP, UDP
    from scapy.layers.l2 import Ether

    pkt = Ether(frame)
    for layer in (UDP, TCP):
        if layer in pkt:
            got = pkt[layer].chksum
            again = pkt.copy()
            del again[layer].chksum
            return layer.__name__, Ether(bytes(again))[layer].chksum == got
    return "other", True
