"""Sockets and the clock around the transport's state machines.

The transport (``endpoints/transport.py``) decides what to send and when; this module
only moves bytes, through one UDP socket per endpoint bound to the MRC-lite port: it
receives everything and sends everything.

The EV of a packet travels in its BTH ``pkey`` (docs/packet-formats.md): this module
writes each packet's EV there as it sends and reads it from there as packets arrive,
so the state machines see it as they did when it was the UDP source port. With the EV
inside the packet, one socket sends every EV, and the kernel's segmentation offload
can send a run of packets in one system call while each keeps its own EV
(``Transmitter``); on the receiving side the kernel may likewise hand over a run in
one read (``UDP_GRO``). Both cut the system calls per packet, the largest part of an
endpoint's CPU per packet (docs/performance.md, "The endpoints").
"""

from __future__ import annotations

import errno
import select
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from typing import Any, Protocol

from endpoints.transport import Tx
from endpoints.wire import EV_OFFSET


class Driven(Protocol):
    """What the I/O layer needs of a state machine: ``Sender`` and ``RoceSender``
    (``SenderLike``), ``Receiver`` and ``RoceReceiver`` (``ReceiverLike``)."""

    def poll(self, now: float) -> list[Tx]: ...

    def next_wakeup(self) -> float | None: ...


class SenderLike(Driven, Protocol):
    @property
    def finished(self) -> bool: ...

    def on_packet(self, data: bytes | memoryview, now: float) -> None: ...


class ReceiverLike(Driven, Protocol):
    @property
    def completed(self) -> list[Any]: ...

    def report(self) -> dict[str, Any]: ...

    def on_packet(self, data: bytes | memoryview, now: float, peer: Any, ev: int, tclass: int = 0) -> list[Tx]: ...

RECV_BUF = 1 << 16
SOCKET_BUFFER = 4 << 20


class IoError(RuntimeError):
    """A socket problem, as one line naming the address and the fix."""


def family_of(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


# (address, UDP port), or the kernel's IPv6 socket address (address, port, flow info,
# scope id) as a datagram came from: the receiver answers that one
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


ECT0 = 0b10  # the ECN field every endpoint packet leaves with: ECN-capable, ECT(0)


def _ect(s: socket.socket, fam: int, dscp: int = 0) -> None:
    """Send ECN-capable (ECT(0)) in class ``dscp`` (MRC-lite's 0; the RoCE baseline's
    26): a congested fabric port marks CE instead (docs/fabric.md)."""
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, dscp << 2 | ECT0)
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, dscp << 2 | ECT0)


def _tclass_cmsg(fam: int, tclass: int) -> tuple[int, int, bytes]:
    """The ancillary data that sends one datagram with its own traffic class."""
    if fam == socket.AF_INET6:
        return socket.IPPROTO_IPV6, socket.IPV6_TCLASS, struct.pack("=i", tclass)
    return socket.IPPROTO_IP, socket.IP_TOS, bytes([tclass])


UDP_SEGMENT = 103  # linux/udp.h: send a run of equal-sized datagrams in one call
UDP_GRO = 104  # linux/udp.h: receive a run the kernel coalesced in one call
GSO_SEGMENTS = 32  # packets per call at most (the kernel allows 64)
GSO_BYTES = 60000  # bytes per call at most (one IP packet holds 65,535)
_SEGMENT = struct.Struct("=H")
_EV = struct.Struct("!H")
_GSO_REFUSED = (errno.EIO, errno.EINVAL, errno.ENOPROTOOPT, errno.EOPNOTSUPP, errno.EMSGSIZE)
# A datagram these lose is the transport's to recover (full buffers, an unreachable or
# refused peer, a peer address no route or family fits)
_TX_LOST = (errno.ENOBUFS, errno.EAGAIN, errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH,
            errno.EINVAL, errno.EPERM, errno.EACCES, errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)


class Transmitter:
    """Sends the transport's packets from the endpoint's one socket (the one it
    listens on), each with its EV written into BTH ``pkey`` (``wire.EV_OFFSET``).

    Consecutive packets to one address of one size (the last of a run may be
    shorter) leave in one ``sendmsg`` with UDP segmentation offload (``UDP_SEGMENT``):
    the kernel cuts the run into datagrams, each with its own EV, so spraying stays
    per packet. A kernel or socket that refuses the offload gets one datagram per
    call from then on (counted once, ``gso_refused``). Errors that lose a datagram
    (full buffers, an unreachable peer) are counted (``tx_errors``) and left to the
    transport, which recovers them as losses."""

    def __init__(self, sock: socket.socket, gso: bool = True) -> None:
        self.sock = sock
        self.gso = gso and sys.platform.startswith("linux")

    def send(self, out: list[Tx], dst: SockAddr | None, stats: dict[str, int]) -> None:
        """Send ``out`` in order; ``dst`` (address, port) is every packet's destination
        (the sender's receiver) or None (each packet's ``peer``: the receiver answers
        the address and port a transfer's packets come from)."""
        if len(out) == 1:  # one answer (an ACK): no run to cut
            pkt = out[0]
            self._flush(out, dst if dst is not None else pkt.peer, stats)
            return
        run: list[Tx] = []
        run_to: SockAddr = ("", 0)
        size = 0
        total = 0
        limit = GSO_SEGMENTS if self.gso else 1
        for pkt in out:
            to = dst if dst is not None else pkt.peer
            n = len(pkt.payload)
            if run and (to != run_to or n > size or len(run) >= limit or total + n > GSO_BYTES
                        or pkt.tclass != run[0].tclass):
                self._flush(run, run_to, stats)
                run = []
            if not run:
                run_to, size, total = to, n, 0
            run.append(pkt)
            total += n
            if n < size:  # a shorter packet ends a run
                self._flush(run, run_to, stats)
                run = []
        if run:
            self._flush(run, run_to, stats)

    def _flush(self, run: list[Tx], to: SockAddr, stats: dict[str, int]) -> None:
        addr = _sockaddr(*to) if len(to) == 2 else to
        if len(run) == 1:
            buf = bytearray(run[0].payload)
            if len(buf) >= EV_OFFSET + 2:
                _EV.pack_into(buf, EV_OFFSET, run[0].ev)
        else:
            buf = bytearray().join([p.payload for p in run])
            off = 0
            for p in run:
                if len(p.payload) >= EV_OFFSET + 2:
                    _EV.pack_into(buf, off + EV_OFFSET, p.ev)
                off += len(p.payload)
        try:
            if run[0].tclass is not None:  # a class of its own (the RoCE baseline's CNPs)
                cmsg = [_tclass_cmsg(self.sock.family, run[0].tclass)]
                if len(run) > 1:
                    cmsg.append((socket.SOL_UDP, UDP_SEGMENT, _SEGMENT.pack(len(run[0].payload))))
                self.sock.sendmsg([buf], cmsg, 0, addr)
            elif len(run) == 1:
                self.sock.sendto(buf, addr)
            else:
                self.sock.sendmsg([buf], [(socket.SOL_UDP, UDP_SEGMENT, _SEGMENT.pack(len(run[0].payload)))],
                                  0, addr)
        except OSError as exc:
            if len(run) > 1 and exc.errno in _GSO_REFUSED:
                self.gso = False
                stats["gso_refused"] = 1
                for p in run:
                    self._flush([p], to, stats)
            elif exc.errno in _TX_LOST:
                stats["tx_errors"] = stats.get("tx_errors", 0) + len(run)
            else:
                raise


def listen(addr: str, port: int, want_tclass: bool, coalesce: bool = False, dscp: int = 0) -> socket.socket:
    """The non-blocking UDP socket everything for this endpoint arrives on and
    leaves from, its packets in class ``dscp`` with ECT(0). With ``coalesce`` the
    kernel may hand over a run of datagrams of one flow in one read (``UDP_GRO``,
    where the interface coalesces: see ``run_receiver``)."""
    fam = family_of(addr or "::")
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        _buffers(s)
        if want_tclass:
            if fam == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS, 1)
            else:
                s.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        if coalesce and sys.platform.startswith("linux"):
            try:
                s.setsockopt(socket.SOL_UDP, UDP_GRO, 1)
            except OSError:
                pass  # an older kernel: one datagram per read
        _ect(s, fam, dscp)
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


@dataclass
class RunResult:
    elapsed: float
    timed_out: bool
    io: dict[str, int]


def run_sender(sender: SenderLike, sock: socket.socket, tx: Transmitter, dst: SockAddr, timeout: float,
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
            tx.send(out, dst, stats)
        # The wait is skipped when the sender has more to send now (its next wake-up
        # is due), and returns at once when an answer arrived meanwhile: no read
        # attempt and poll that would find nothing when the window is full.
        if sender.finished:
            break
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


def _ancillary(ancdata: list[tuple[int, int, bytes]], family: int) -> tuple[int, int]:
    """The traffic class (IPv6) or TOS (IPv4) of a datagram, and the segment size when
    the kernel coalesced a run of them (``UDP_GRO``; 0 when it did not)."""
    tclass = seg = 0
    for level, kind, data in ancdata:
        if family == socket.AF_INET6 and level == socket.IPPROTO_IPV6 and kind == socket.IPV6_TCLASS:
            tclass = int.from_bytes(data[:4], sys.byteorder)
        elif level == socket.IPPROTO_IP and kind == socket.IP_TOS:
            tclass = int(data[0])
        elif level == socket.SOL_UDP and kind == UDP_GRO:
            seg = int.from_bytes(data[:2], sys.byteorder)
    return tclass, seg


def run_receiver(receiver: ReceiverLike, sock: socket.socket, tx: Transmitter, count: int, timeout: float,
                 linger: float, clock: Callable[[], float] = time.monotonic) -> RunResult:
    """Drive ``receiver`` until ``count`` transfers completed (then ``linger`` seconds
    more, answering retransmissions) or ``timeout`` seconds pass."""
    buf = bytearray(RECV_BUF)
    stats: dict[str, int] = {}
    read = _Reader(receiver, sock, tx, buf, stats)
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
        read(now)
        out = receiver.poll(now)
        if out:
            tx.send(out, None, stats)
        # Straight to the wait, which returns at once if more arrived meanwhile: a
        # second read attempt and poll before it would cost as much and find nothing
        # as often as not.
        wake = receiver.next_wakeup()
        wait = 0.05 if wake is None else min(wake - clock(), 0.05)
        if done_at is not None:
            wait = min(wait, done_at + linger - clock())
        _wait(sock, wait)


class _Reader:
    """Reads what arrived (up to 256 reads) and hands each datagram to the receiver
    with its source, EV and traffic class, sending its answers at once."""

    def __init__(self, receiver: ReceiverLike, sock: socket.socket, tx: Transmitter, buf: bytearray,
                 stats: dict[str, int]) -> None:
        self.on_packet = receiver.on_packet
        self.recvmsg_into = sock.recvmsg_into
        self.family = sock.family
        self.anc = socket.CMSG_SPACE(4) + socket.CMSG_SPACE(2)
        self.tx = tx
        self.buf = buf
        self.bufs = [buf]
        self.mv = memoryview(buf)
        self.stats = stats
        # the one ancillary item of a datagram the kernel did not coalesce (IPv6)
        self.tclass_only = (socket.IPPROTO_IPV6, socket.IPV6_TCLASS) if self.family == socket.AF_INET6 else None

    def __call__(self, now: float) -> None:
        recvmsg_into, bufs, anc, buf, mv = self.recvmsg_into, self.bufs, self.anc, self.buf, self.mv
        on_packet, tx, stats, tclass_only = self.on_packet, self.tx, self.stats, self.tclass_only
        for _ in range(256):
            try:
                n, ancdata, _flags, addr = recvmsg_into(bufs, anc)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionRefusedError:
                continue
            if len(ancdata) == 1 and ancdata[0][:2] == tclass_only:
                tclass, seg = int.from_bytes(ancdata[0][2][:4], sys.byteorder), 0
            else:
                tclass, seg = _ancillary(ancdata, self.family) if ancdata else (0, 0)
            if 0 < seg < n:
                self._coalesced(n, seg, now, addr, tclass)
                continue
            # one datagram (an empty one too: the receiver counts it)
            ev = (buf[EV_OFFSET] << 8 | buf[EV_OFFSET + 1]) if n >= EV_OFFSET + 2 else 0
            out = on_packet(mv[:n], now, addr, ev, tclass)
            if out:
                tx.send(out, None, stats)

    def _coalesced(self, n: int, seg: int, now: float, addr: Any, tclass: int) -> None:
        """A run of ``seg``-byte datagrams (the last may be shorter) read at once."""
        self.stats["coalesced_reads"] = self.stats.get("coalesced_reads", 0) + 1
        buf, mv = self.buf, self.mv
        for off in range(0, n, seg):
            end = min(off + seg, n)
            ev = _EV.unpack_from(buf, off + EV_OFFSET)[0] if end - off >= EV_OFFSET + 2 else 0
            out = self.on_packet(mv[off:end], now, addr, ev, tclass)
            if out:
                self.tx.send(out, None, self.stats)
