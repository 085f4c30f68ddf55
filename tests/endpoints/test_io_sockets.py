"""endpoints/io.py on real loopback sockets: the traffic class reaches the receiver
(how the NIC's trim mark gets to it, docs/nic.md); the transmitter writes each
packet's EV into its BTH pkey and sends a run of equal packets in one system call
(UDP segmentation offload), which the kernel delivers as the datagrams they were; the
receiver's loop cuts a run the kernel coalesced (UDP_GRO) back into its packets, and hands on
each datagram it did not coalesce with its EV and class."""

from __future__ import annotations

import errno
import os
import random
import socket
import sys
import time

import pytest

from endpoints import io
from endpoints.transport import Tx

RNG = random.Random(os.getpid() ^ int(time.time()))


def receive(sock: socket.socket) -> tuple[bytes, tuple, int]:
    sock.settimeout(2)
    buf = bytearray(2048)
    n, anc, _, addr = sock.recvmsg_into([buf], socket.CMSG_SPACE(4))
    return bytes(buf[:n]), addr, io._ancillary(anc, sock.family)[0]


@pytest.mark.parametrize("family, addr", [(socket.AF_INET6, "::1"), (socket.AF_INET, "127.0.0.1")])
def test_traffic_class_reaches_the_receiver(family: int, addr: str) -> None:
    port = RNG.randrange(20000, 60000)
    rx = io.listen(addr, port, want_tclass=True)
    rx.setblocking(True)
    tx = socket.socket(family, socket.SOCK_DGRAM)
    try:
        for tclass in (62 << 2 | 1, 0):  # the trim DSCP 62 with ECN 01, then nothing
            if family == socket.AF_INET6:
                tx.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, tclass)
            else:
                tx.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tclass)
            tx.sendto(b"hello", (addr, port))
            data, _, got = receive(rx)
            assert data == b"hello" and got == tclass
    finally:
        tx.close()
        rx.close()


def stamped(payload: bytes, ev: int) -> bytes:
    """``payload`` as it must arrive: bytes 2-3 (BTH pkey) replaced by the EV."""
    return payload[:2] + ev.to_bytes(2, "big") + payload[4:]


class Calls:
    """A socket that records what the transmitter asks of it (and may refuse GSO)."""

    family = socket.AF_INET6

    def __init__(self, refuse_gso: bool = False) -> None:
        self.calls: list[tuple[str, bytes, int | None, tuple]] = []
        self.refuse_gso = refuse_gso

    def sendto(self, data: bytes, addr: tuple) -> int:
        self.calls.append(("sendto", bytes(data), None, addr))
        return len(data)

    def sendmsg(self, buffers: list, anc: list, flags: int, addr: tuple) -> int:
        if self.refuse_gso:
            raise OSError(errno.EIO, "Input/output error")
        ((level, kind, seg),) = anc
        assert (level, kind) == (socket.SOL_UDP, io.UDP_SEGMENT)
        self.calls.append(("sendmsg", bytes(buffers[0]), int.from_bytes(seg, sys.byteorder), addr))
        return len(buffers[0])


def packets(sizes: list[int], ev0: int = 100) -> list[Tx]:
    return [Tx(ev0 + k, bytes([k]) * n) for k, n in enumerate(sizes)]


def test_runs_of_equal_packets_leave_in_one_call_each() -> None:
    """Equal sizes go together; a shorter packet ends its run; a larger one, another
    address, the 32-packet and the 60,000-byte limits start a new run."""
    sock = Calls()
    tx = io.Transmitter(sock)  # type: ignore[arg-type]
    out = packets([1000] * 3 + [400] + [1000] * 2 + [1200])
    stats: dict[str, int] = {}
    tx.send(out, ("fd00::2", 4791), stats)
    addr = ("fd00::2", 4791, 0, 0)
    want = [("sendmsg", b"".join(stamped(p.payload, p.ev) for p in out[:4]), 1000, addr),
            ("sendmsg", b"".join(stamped(p.payload, p.ev) for p in out[4:6]), 1000, addr),
            ("sendto", stamped(out[6].payload, out[6].ev), None, addr)]
    assert sock.calls == want and stats == {}

    sock.calls.clear()
    tx.send(packets([100] * 40), ("fd00::2", 4791), stats)
    assert [(c[0], len(c[1]) // 100) for c in sock.calls] == [("sendmsg", 32), ("sendmsg", 8)]
    sock.calls.clear()
    tx.send(packets([1500] * 45), ("fd00::2", 4791), stats)
    assert [len(c[1]) // 1500 for c in sock.calls] == [32, 13]  # 40 x 1,500 would pass 60,000 bytes
    sock.calls.clear()
    answers = [Tx(1, b"a" * 40, ("fd00::1", 5000)), Tx(2, b"b" * 40, ("fd00::1", 5000)),
               Tx(3, b"c" * 40, ("fd00::3", 4791))]
    tx.send(answers, None, stats)
    assert [(c[0], c[3]) for c in sock.calls] == [("sendmsg", ("fd00::1", 5000, 0, 0)),
                                                   ("sendto", ("fd00::3", 4791, 0, 0))]


def test_without_gso_or_when_the_kernel_refuses_it_each_packet_is_one_call() -> None:
    out = packets([1000] * 3)
    addr = ("fd00::2", 4791, 0, 0)
    want = [("sendto", stamped(p.payload, p.ev), None, addr) for p in out]
    off = Calls()
    stats: dict[str, int] = {}
    io.Transmitter(off, gso=False).send(out, ("fd00::2", 4791), stats)  # type: ignore[arg-type]
    assert off.calls == want and stats == {}
    refusing = Calls(refuse_gso=True)
    tx = io.Transmitter(refusing)  # type: ignore[arg-type]
    tx.send(out, ("fd00::2", 4791), stats)
    assert refusing.calls == want and stats == {"gso_refused": 1} and not tx.gso


class Refusing(Calls):
    """A socket whose every send fails with ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__()
        self.code = code

    def sendto(self, data: bytes, addr: tuple) -> int:
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize("code", [errno.EINVAL, errno.EHOSTUNREACH, errno.ENOBUFS, errno.EADDRNOTAVAIL])
def test_a_datagram_the_kernel_refuses_is_counted_not_raised(code: int) -> None:
    """An answer to a peer address the kernel will not send to (a hostile or odd
    source) is lost and counted; the endpoint carries on."""
    stats: dict[str, int] = {}
    io.Transmitter(Refusing(code), gso=False).send(packets([40, 40]), ("fe80::1", 9), stats)  # type: ignore[arg-type]
    assert stats == {"tx_errors": 2}


@pytest.mark.parametrize("addr", ["::1", "127.0.0.1"])
def test_a_run_arrives_as_its_datagrams_each_with_its_ev(addr: str) -> None:
    port = RNG.randrange(20000, 60000)
    rx = io.listen(addr, port, want_tclass=False)
    rx.setblocking(True)
    sock = io.listen(addr, 0, want_tclass=False)
    sport = sock.getsockname()[1]
    out = [Tx(RNG.randrange(1 << 16), os.urandom(1028)) for _ in range(7)] + [Tx(0, os.urandom(300))]
    stats: dict[str, int] = {}
    try:
        io.Transmitter(sock).send(out, (addr, port), stats)
        got = [receive(rx) for _ in out]
    finally:
        sock.close()
        rx.close()
    assert [g[0] for g in got] == [stamped(p.payload, p.ev) for p in out] and stats == {}
    assert {g[1][1] for g in got} == {sport}  # every datagram from the one socket


class Recording:
    """What run_receiver hands the receiving state machine, recorded."""

    def __init__(self, expect: int) -> None:
        self.expect = expect
        self.got: list[tuple[bytes, tuple, int, int]] = []
        self.completed: list[object] = []

    def on_packet(self, data: memoryview, now: float, peer: tuple, ev: int, tclass: int) -> list[Tx]:
        self.got.append((bytes(data), peer, ev, tclass))
        if len(self.got) == self.expect:
            self.completed.append(self)
        return []

    def poll(self, now: float) -> list[Tx]:
        return []

    def next_wakeup(self) -> None:
        return None


def test_the_receiver_loop_cuts_a_coalesced_run_into_its_packets() -> None:
    """A run sent in one call reaches a UDP_GRO socket on loopback as one read (the
    kernel keeps it whole); each packet is handed on with its own EV, the sender's
    address and port, and the traffic class."""
    port = RNG.randrange(20000, 60000)
    rx = io.listen("::1", port, want_tclass=True, coalesce=True)
    sock = io.listen("::1", 0, want_tclass=False)
    src = ("::1", sock.getsockname()[1], 0, 0)  # the kernel's IPv6 socket address
    out = [Tx(1000 + k, os.urandom(1028)) for k in range(12)] + [Tx(7, os.urandom(100))]
    rec = Recording(len(out))
    try:
        io.Transmitter(sock).send(out, ("::1", port), {})
        res = io.run_receiver(rec, rx, io.Transmitter(rx), 1, timeout=5, linger=0)  # type: ignore[arg-type]
    finally:
        sock.close()
        rx.close()
    assert rec.got == [(stamped(p.payload, p.ev), src, p.ev, io.ECT0) for p in out]
    assert res.io.get("coalesced_reads", 0) >= 1


@pytest.mark.parametrize("family, addr", [(socket.AF_INET6, "::1"), (socket.AF_INET, "127.0.0.1")])
def test_the_receiver_loop_hands_on_each_datagram_with_its_ev_and_class(family: int, addr: str) -> None:
    """Without UDP_GRO every datagram is its own read: each is handed on whole with
    the EV from its bytes 2-3 (0 when it is too short to hold one), the sender's
    address and the class it was sent in; an answer goes back to that address."""
    port = RNG.randrange(20000, 60000)
    rx = io.listen(addr, port, want_tclass=True, coalesce=False)
    sock = io.listen(addr, 0, want_tclass=False, dscp=26)
    src = (addr, sock.getsockname()[1], 0, 0) if family == socket.AF_INET6 else (addr, sock.getsockname()[1])
    payloads = [bytes([0x0A, 0, 0x12, 0x34]) + os.urandom(40), bytes([0x11, 0, 0xAB, 0xCD]), b"\x0a\x00\x07", b""]
    for p in payloads:
        sock.sendto(p, (addr, port))

    class Answering(Recording):
        def on_packet(self, data: memoryview, now: float, peer: tuple, ev: int, tclass: int) -> list[Tx]:
            super().on_packet(data, now, peer, ev, tclass)
            return [Tx(0x4242, b"\x11\x00\xff\xff" + bytes(data[:4]), peer)] if len(self.got) == 1 else []

    rec = Answering(len(payloads))
    try:
        io.run_receiver(rec, rx, io.Transmitter(rx), 1, timeout=5, linger=0)  # type: ignore[arg-type]
        answer = receive(sock)
    finally:
        sock.close()
        rx.close()
    tclass = 26 << 2 | io.ECT0
    assert rec.got == [(payloads[0], src, 0x1234, tclass), (payloads[1], src, 0xABCD, tclass),
                       (payloads[2], src, 0, tclass), (b"", src, 0, tclass)]
    assert answer[0] == b"\x11\x00\x42\x42" + payloads[0][:4]


def test_a_port_in_use_is_one_clear_error() -> None:
    port = RNG.randrange(20000, 60000)
    holder = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    holder.bind(("127.0.0.1", port))
    try:
        with pytest.raises(io.IoError, match="cannot listen on UDP 127.0.0.1 port"):
            io.listen("127.0.0.1", port, want_tclass=False)
    finally:
        holder.close()


@pytest.mark.parametrize("linger", [0.0, 0.3])
def test_a_finished_sender_reads_for_linger_seconds(linger: float) -> None:
    """``run_sender`` after the verdict: answers already waiting are read (and counted
    late by the sender) only while it lingers; the elapsed time is the transfer's."""
    from endpoints import wire
    from tests.endpoints.test_transport_sim import answers, trimmed_transfer

    run = trimmed_transfer()
    nacks = answers(run, wire.SYNDROME_NACK_TRIMMED)
    before = run.sender.report()["control"]
    port = RNG.randrange(20000, 60000)
    sock = io.listen("127.0.0.1", port, want_tclass=False)
    tx = io.Transmitter(sock)
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for p in nacks:
            peer.sendto(p, ("127.0.0.1", port))
        t0 = time.monotonic()
        res = io.run_sender(run.sender, sock, tx, ("127.0.0.1", port + 1), timeout=5, linger=linger)
        took = time.monotonic() - t0
    finally:
        peer.close()
        sock.close()
    after = run.sender.report()["control"]
    late = [after[k] - before[k] for k in ("late", "trim_nacks_late")]
    assert not res.timed_out and res.elapsed < 0.1
    if linger:
        assert late == [len(nacks), len(nacks)] and nacks
        assert took >= linger
    else:
        assert late == [0, 0]
