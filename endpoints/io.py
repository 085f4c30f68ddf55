"""Sockets and the clock around the transport's state machines.

The transport (``endpoints/transport.py``) decides what to send and when; this module
only moves bytes: one UDP socket bound to the MRC-lite port receives, and a
transmitter sends each packet with UDP source port = its EV.

Sending with up to 256 different source ports, two ways (``--tx``):

- ``raw`` (needs CAP_NET_RAW, i.e. root as in Mininet hosts): one raw IPPROTO_UDP
  socket; the UDP header (source port = EV) is built here, the kernel adds the IP
  header and, for IPv6, the UDP checksum (``IPV6_CHECKSUM``; IPv4 sends checksum 0,
  which UDP over IPv4 allows). Any EV works, even 0 (the plan's GENERATED
  EVs start their entropy at 1 to avoid it, a plain list may hold it), and no port
  has to be free. A raw UDP socket would also get a copy of
  every UDP packet the host receives: a one-instruction BPF filter drops them all.
- ``sockets``: one UDP socket per EV bound to that port (and connected, for the
  sender). Works without root; the EV's port must be free and non-zero.

``auto`` (the default) is ``sockets``, with ``raw`` for the EVs that cannot have a
socket when the process may open raw sockets. The two send about equally fast on
loopback (bench/endpoints_loopback.py interleaves them: raw 0.9x to 1.3x of sockets
on the shared 2-core machine, where both exceed 100,000 packets/s); ``sockets``
needs no privilege and lets the kernel fill the UDP checksum for IPv4 too.
"""

from __future__ import annotations

import ctypes
import errno
import select
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from endpoints.transport import Receiver, Sender, Tx

SO_ATTACH_FILTER = 26
_UDP = struct.Struct("!HHHH")
RECV_BUF = 1 << 16
SOCKET_BUFFER = 4 << 20


class IoError(RuntimeError):
    """A socket problem, as one line naming the address and the fix."""


def family_of(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


SockAddr = tuple[str, int] | tuple[str, int, int, int]


def _sockaddr(addr: str, port: int) -> SockAddr:
    return (addr, port, 0, 0) if family_of(addr) == socket.AF_INET6 else (addr, port)


SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33


def _buffers(s: socket.socket) -> None:
    """Socket buffers of a few MB: a window of 256 packets must fit while the other
    process is descheduled. The FORCE options pass net.core.[rw]mem_max (root);
    without root the kernel caps the plain ones."""
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            s.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER)
        except OSError:
            try:
                s.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER)
            except OSError:
                pass


ECT0 = 0b10  # the ECN field every MRC-lite packet leaves with: ECN-capable, ECT(0)


def _ect(s: socket.socket, fam: int) -> None:
    """Send ECN-capable (ECT(0)): a congested fabric port marks CE instead (docs/fabric.md)."""
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, ECT0)
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECT0)


class Transmitter(Protocol):
    def send(self, ev: int, payload: bytes, dst: str) -> None: ...
    def close(self) -> None: ...


class RawTransmitter:
    """One raw UDP socket for every EV (see the module docstring)."""

    def __init__(self, local: str, port: int) -> None:
        fam = family_of(local)
        self.family = fam
        self.port = port
        try:
            s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_UDP)
        except PermissionError:
            raise IoError("--tx raw needs root (CAP_NET_RAW); run as root or use --tx sockets") from None
        try:
            drop_all = (ctypes.c_uint8 * 8)(0x06, 0, 0, 0, 0, 0, 0, 0)  # BPF_RET|BPF_K, k=0
            self._filter = drop_all  # keep the buffer alive while the socket is
            prog = struct.pack("HL", 1, ctypes.addressof(drop_all))
            s.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, prog)
            if fam == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_CHECKSUM, 6)
            if local not in ("", "::", "0.0.0.0"):
                s.bind(_sockaddr(local, 0))
            _buffers(s)
            _ect(s, fam)
        except OSError as exc:
            s.close()
            raise IoError(f"raw socket on {local or 'any address'}: {exc.strerror}; check the address or use "
                          "--tx sockets") from None
        self.sock = s
        self._send = s.sendto
        self._dst: dict[str, SockAddr] = {}

    def send(self, ev: int, payload: bytes, dst: str) -> None:
        addr = self._dst.get(dst)
        if addr is None:
            addr = self._dst[dst] = _sockaddr(dst, 0)
        self._send(_UDP.pack(ev, self.port, 8 + len(payload), 0) + payload, addr)

    def close(self) -> None:
        self.sock.close()


class PortSockets:
    """One UDP socket per EV, bound to (local, EV) and, for the sender, connected to
    the receiver; opened on first use. With ``raw_fallback`` an EV whose port cannot
    be bound (0, or in use) goes out through a raw socket instead."""

    def __init__(self, local: str, port: int, connect_to: str | None = None, raw_fallback: bool = False) -> None:
        self.local = local
        self.port = port
        self.connect_to = connect_to
        self.raw_fallback = raw_fallback
        self._raw: RawTransmitter | None = None
        self._socks: dict[int, socket.socket] = {}
        self._sends: dict[int, Callable[[bytes, str], object]] = {}
        self.raw_evs: list[int] = []

    def open(self, ev: int) -> Callable[[bytes, str], object]:
        fn = self._sends.get(ev)
        if fn is not None:
            return fn
        try:
            fn = self._open_socket(ev)
        except IoError:
            if not self.raw_fallback:
                raise
            if self._raw is None:
                self._raw = RawTransmitter(self.local, self.port)
            raw = self._raw
            self.raw_evs.append(ev)

            def fn(payload: bytes, dst: str, ev: int = ev) -> object:
                raw.send(ev, payload, dst)
                return None
        self._sends[ev] = fn
        return fn

    def _open_socket(self, ev: int) -> Callable[[bytes, str], object]:
        if not 0 < ev <= 0xFFFF:
            raise IoError(f"EV {ev} cannot be a UDP source port with --tx sockets; use --tx raw or auto (root)")
        fam = family_of(self.connect_to or self.local or "::")
        s = socket.socket(fam, socket.SOCK_DGRAM)
        try:
            _buffers(s)
            _ect(s, fam)
            s.bind(_sockaddr(self.local or ("::" if fam == socket.AF_INET6 else "0.0.0.0"), ev))
            if self.connect_to is not None:
                s.connect(_sockaddr(self.connect_to, self.port))
        except OSError as exc:
            s.close()
            raise IoError(f"cannot bind UDP port {ev} (an EV) on {self.local or 'any address'}: {exc.strerror}; "
                          "free the port, choose other EVs, or use --tx raw (root)") from None
        self._socks[ev] = s
        if self.connect_to is not None:
            send = s.send
            return lambda payload, dst: send(payload)
        sendto = s.sendto
        port = self.port
        if fam == socket.AF_INET6:
            return lambda payload, dst: sendto(payload, (dst, port, 0, 0))
        return lambda payload, dst: sendto(payload, (dst, port))

    def send(self, ev: int, payload: bytes, dst: str) -> None:
        fn = self._sends.get(ev)
        if fn is None:
            fn = self.open(ev)
        fn(payload, dst)

    def close(self) -> None:
        for s in self._socks.values():
            s.close()
        self._socks.clear()
        self._sends.clear()
        if self._raw is not None:
            self._raw.close()


def can_open_raw() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP).close()
        return True
    except OSError:
        return False


def transmitter(kind: str, local: str, port: int, connect_to: str | None = None,
                evs: list[int] | None = None) -> Transmitter:
    """``kind`` raw | sockets | auto (a socket per EV, raw for the EVs that cannot
    have one, when allowed); with ``evs`` every EV is set up at once, so a port that
    is not free is found before anything is sent."""
    if kind == "raw":
        return RawTransmitter(local or ("::" if family_of(connect_to or "::") == socket.AF_INET6 else "0.0.0.0"),
                              port)
    if kind in ("sockets", "auto"):
        tx = PortSockets(local, port, connect_to, raw_fallback=kind == "auto" and can_open_raw())
        try:
            for ev in evs or ():
                tx.open(ev)
        except IoError:
            tx.close()
            raise
        return tx
    raise IoError(f"--tx {kind!r}: choose raw, sockets or auto")


def listen(addr: str, port: int, want_tclass: bool) -> socket.socket:
    """The non-blocking UDP socket everything for this endpoint arrives on."""
    fam = family_of(addr or "::")
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        _buffers(s)
        if want_tclass:
            if fam == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
            else:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        s.bind(_sockaddr(addr or ("::" if fam == socket.AF_INET6 else "0.0.0.0"), port))
    except OSError as exc:
        s.close()
        raise IoError(f"cannot listen on UDP {addr or 'any address'} port {port}: {exc.strerror}; "
                      "give an address of this host and a free port") from None
    s.setblocking(False)
    return s


def _wait(sock: socket.socket, timeout: float) -> None:
    if timeout > 0:
        select.select([sock], [], [], timeout)


def _transmit(tx: Transmitter, out: list[Tx], dst: str | None, stats: dict[str, int]) -> None:
    for pkt in out:
        to = dst if dst is not None else pkt.peer
        try:
            try:
                tx.send(pkt.ev, pkt.payload, to)
            except ConnectionRefusedError:
                # A connected socket reports an earlier ICMP port unreachable (an OPEN
                # sent before the receiver listened) by failing the next send: the
                # report is consumed, send again.
                stats["icmp_reported"] = stats.get("icmp_reported", 0) + 1
                tx.send(pkt.ev, pkt.payload, to)
        except IoError:
            # The receiver answers on the EV a packet came from: a source port it
            # cannot bind (0, its own port, one in use) gets no answer.
            stats["ev_unbindable"] = stats.get("ev_unbindable", 0) + 1
        except OSError as exc:
            if exc.errno in (errno.ENOBUFS, errno.EAGAIN, errno.ECONNREFUSED, errno.EHOSTUNREACH,
                             errno.ENETUNREACH):
                stats["tx_errors"] = stats.get("tx_errors", 0) + 1  # the transport recovers it as a loss
            else:
                raise


@dataclass
class RunResult:
    elapsed: float
    timed_out: bool
    io: dict[str, int]


def run_sender(sender: Sender, sock: socket.socket, tx: Transmitter, dst: str, timeout: float,
               clock: Callable[[], float] = time.monotonic, linger: float = 0.0) -> RunResult:
    """Drive ``sender`` until it finishes or ``timeout`` seconds pass; after it
    finished, keep reading for ``linger`` seconds, so that answers still on their way
    are counted (``Sender`` counts them as late). The elapsed time is the transfer's."""
    buf = bytearray(RECV_BUF)
    mv = memoryview(buf)
    recv_into = sock.recv_into
    on_packet = sender.on_packet
    stats: dict[str, int] = {}
    start = clock()
    end = start + timeout
    while not sender.finished:
        now = clock()
        if now > end:
            return RunResult(now - start, True, stats)
        for _ in range(256):
            try:
                n = recv_into(buf)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                continue
            on_packet(mv[:n], now)
        out = sender.poll(now)
        if out:
            _transmit(tx, out, dst, stats)
            continue
        wake = sender.next_wakeup()
        wait = 0.05 if wake is None else min(wake - clock(), 0.05)
        _wait(sock, wait)
    elapsed = clock() - start
    _drain(sock, on_packet, recv_into, buf, mv, clock, clock() + linger)
    return RunResult(elapsed, False, stats)


def _drain(sock: socket.socket, on_packet: Callable[[memoryview, float], None],
           recv_into: Callable[[bytearray], int], buf: bytearray, mv: memoryview,
           clock: Callable[[], float], until: float) -> None:
    """Hand every packet that arrives before ``until`` to ``on_packet``."""
    while (left := until - clock()) > 0:
        try:
            n = recv_into(buf)
        except (BlockingIOError, InterruptedError):
            _wait(sock, left)
            continue
        except ConnectionRefusedError:
            continue
        on_packet(mv[:n], clock())


def _tclass(ancdata: list[tuple[int, int, bytes]], family: int) -> int:
    for level, kind, data in ancdata:
        if family == socket.AF_INET6 and level == socket.IPPROTO_IPV6 and kind == socket.IPV6_TCLASS:
            return int.from_bytes(data[:4], sys.byteorder)
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
            return int(data[0])
    return 0


def run_receiver(receiver: Receiver, sock: socket.socket, tx: Transmitter, count: int, timeout: float,
                 linger: float, clock: Callable[[], float] = time.monotonic) -> RunResult:
    """Drive ``receiver`` until ``count`` transfers completed (then ``linger`` seconds
    more, answering retransmissions) or ``timeout`` seconds pass."""
    buf = bytearray(RECV_BUF)
    mv = memoryview(buf)
    family = sock.family
    anc = socket.CMSG_SPACE(4)
    recvmsg_into = sock.recvmsg_into
    on_packet = receiver.on_packet
    stats: dict[str, int] = {}
    start = clock()
    end = start + timeout
    done_at: float | None = None
    while True:
        now = clock()
        if done_at is None and len(receiver.completed) >= count:
            done_at = now
        if done_at is not None and now >= done_at + linger:
            return RunResult(done_at - start, False, stats)
        if now > end:
            return RunResult(now - start, True, stats)
        got = 0
        for _ in range(256):
            try:
                n, ancdata, _flags, addr = recvmsg_into([buf], anc)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                continue
            got += 1
            out = on_packet(mv[:n], now, addr[0], addr[1], _tclass(ancdata, family) if ancdata else 0)
            if out:
                _transmit(tx, out, None, stats)
        out = receiver.poll(now)
        if out:
            _transmit(tx, out, None, stats)
        if got:
            continue
        wake = receiver.next_wakeup()
        wait = 0.05 if wake is None else min(wake - clock(), 0.05)
        if done_at is not None:
            wait = min(wait, done_at + linger - clock())
        _wait(sock, wait)
