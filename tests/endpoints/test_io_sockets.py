"""endpoints/io.py on real loopback sockets: the traffic class reaches the receiver
(how the NIC's trim mark gets to it, docs/nic.md), and both transmitters send with
UDP source port = EV (the kernel drops a datagram whose UDP checksum is wrong, so
arriving at all proves the raw socket's IPv6 checksum)."""

from __future__ import annotations

import os
import random
import socket
import time

import pytest

from endpoints import io

RNG = random.Random(os.getpid() ^ int(time.time()))


def receive(sock: socket.socket) -> tuple[bytes, tuple, int]:
    sock.settimeout(2)
    buf = bytearray(2048)
    n, anc, _, addr = sock.recvmsg_into([buf], socket.CMSG_SPACE(4))
    return bytes(buf[:n]), addr, io._tclass(anc, sock.family)


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


@pytest.mark.parametrize("kind", ["sockets", pytest.param("raw", marks=pytest.mark.root)])
@pytest.mark.parametrize("addr", ["::1", "127.0.0.1"])
def test_transmitters_send_with_the_ev_as_source_port(kind: str, addr: str) -> None:
    port = RNG.randrange(20000, 60000)
    rx = io.listen(addr, port, want_tclass=False)
    rx.setblocking(True)
    evs = [RNG.randrange(20000, 60000) for _ in range(3)]
    tx = io.transmitter(kind, addr, port, connect_to=addr, evs=evs)
    try:
        for ev in evs:
            payload = os.urandom(1028)
            tx.send(ev, payload, addr)
            data, src, _ = receive(rx)
            assert data == payload and src[1] == ev
    finally:
        tx.close()
        rx.close()


@pytest.mark.root
def test_ev_0_goes_through_the_raw_socket() -> None:
    port = RNG.randrange(20000, 60000)
    rx = io.listen("::1", port, want_tclass=False)
    rx.setblocking(True)
    tx = io.transmitter("auto", "::1", port, connect_to="::1", evs=[0, port + 1])
    try:
        assert tx.raw_evs == [0]
        tx.send(0, b"zero", "::1")
        data, src, _ = receive(rx)
        assert data == b"zero" and src[1] == 0
    finally:
        tx.close()
        rx.close()


def test_a_port_in_use_is_one_clear_error() -> None:
    port = RNG.randrange(20000, 60000)
    holder = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    holder.bind(("127.0.0.1", port))
    try:
        with pytest.raises(io.IoError, match=f"cannot bind UDP port {port} .*free the port"):
            io.transmitter("sockets", "127.0.0.1", 4791, connect_to="127.0.0.1", evs=[port])
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
    tx = io.transmitter("sockets", "127.0.0.1", port, connect_to="127.0.0.1")
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for p in nacks:
            peer.sendto(p, ("127.0.0.1", port))
        t0 = time.monotonic()
        res = io.run_sender(run.sender, sock, tx, "127.0.0.1", timeout=5, linger=linger)
        took = time.monotonic() - t0
    finally:
        peer.close()
        tx.close()
        sock.close()
    after = run.sender.report()["control"]
    late = [after[k] - before[k] for k in ("late", "trim_nacks_late")]
    assert not res.timed_out and res.elapsed < 0.1
    if linger:
        assert late == [len(nacks), len(nacks)] and nacks
        assert took >= linger
    else:
        assert late == [0, 0]
