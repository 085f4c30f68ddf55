"""Attacks on the TLS layer of a server that speaks mutual TLS: clients without a valid
certificate (none, or one another CA signed) and clients that hold their handshake or
a record open. Each is ``attack(target, scale)`` as in ``attacks`` and returns what
the server did, for the test to check.

The TLS records and handshakes are the ``ssl`` module's (an ``SSLObject`` over memory
buffers where the attack needs the bytes themselves); a record header is written by
hand (type, version, length: RFC 8446 section 5.1).
"""

from __future__ import annotations

import random
import socket
import ssl
import struct
import threading
import time

from tests.p4runtime.hostile.attacks import Frames, block, open_conn
from tests.p4runtime.hostile.harness import (CAPABILITIES, DATA, END_HEADERS, END_STREAM, HEADERS, PREFACE,
                                             SETTINGS, certs, client_context, frame, grpc_message,
                                             recv_within, request_headers)

HANDSHAKE, APPLICATION_DATA = 22, 23  # TLS record content types
CALL = (PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block(request_headers())) +
        frame(DATA, END_STREAM, 1, grpc_message(CAPABILITIES)))


def record_header(kind: int, length: int) -> bytes:
    return struct.pack(">BHH", kind, 0x0303, length)


def _connect(target) -> socket.socket:
    return socket.create_connection(("127.0.0.1", target.port), timeout=5)


def _http2_after(sock: socket.socket, context: ssl.SSLContext) -> bool:
    """Handshake with ``context``, then a Capabilities call: did any HTTP/2 come back?
    (A server that refuses the certificate ends the connection with an alert, at the
    handshake or, in TLS 1.3, at the client's first read.)"""
    try:
        tls = context.wrap_socket(sock, server_hostname="127.0.0.1")
    except (ssl.SSLError, OSError):
        return False
    try:
        tls.sendall(CALL)
        return bool(recv_within(tls, 2.0))
    except (ssl.SSLError, OSError):
        return False
    finally:
        tls.close()


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """The server closed ``sock`` within ``seconds`` (what it sent before, an alert say,
    read and dropped)."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        got = recv_within(sock, left)
        if got is None:
            return True
        if not got:
            return False
    return False


def handshake_flood(target, scale: int = 1) -> tuple[int, int]:
    """4 threads x 50 connections, each a full handshake as fast as it goes, with no
    client certificate, with one of another CA, or a record of random bytes instead
    of a ClientHello, each then making a call: (how many got any HTTP/2 back, how many
    of the random records the server did not close at once)."""
    contexts = [client_context(certs(), with_cert=False), client_context(certs("other")),
                client_context(None, with_cert=False)]
    contexts[1].load_verify_locations(cafile=str(certs() / "ca.pem"))  # trusts the server, its own cert wrong
    reached, kept = [], []

    def one_thread(seed: int) -> None:
        rng = random.Random(seed)
        for i in range(50 * scale):
            sock = _connect(target)
            if i % 4 == 3:  # garbage where the ClientHello goes
                try:
                    sock.sendall(record_header(HANDSHAKE, 512) + rng.randbytes(512))
                    kept.append(not closed_within(sock, 2.0))
                finally:
                    sock.close()
                continue
            reached.append(_http2_after(sock, contexts[i % 3]))

    threads = [threading.Thread(target=one_thread, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(reached), sum(kept)


def client_hello() -> bytes:
    """The first flight of a client holding a valid certificate."""
    obj = client_context(certs()).wrap_bio(ssl.MemoryBIO(), out := ssl.MemoryBIO(), server_hostname="127.0.0.1")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def fresh_client_call(target) -> str | None:
    """A new client with a valid certificate: handshake, a Capabilities call; its status."""
    s = open_conn(target)
    try:
        s.sendall(frame(HEADERS, END_HEADERS, 1, block(request_headers())) +
                  frame(DATA, END_STREAM, 1, grpc_message(CAPABILITIES)))
        return Frames(s).read(2.0, lambda f: f.ended(1)).status(1)
    finally:
        s.close()


def slow_handshakes(target, scale: int = 1) -> tuple[str | None, int, int]:
    """50 connections that send nothing and 100 that send their ClientHello a byte
    every 50 ms, for 1.5 s; half-way, a new client with a valid certificate calls.
    (That client's status, how many of the 150 the server closed, how many it let
    finish their handshake.)"""
    hello = client_hello()
    silent = [_connect(target) for _ in range(50 * scale)]
    slow = [_connect(target) for _ in range(100 * scale)]
    status = None
    for i in range(30):
        for s in slow:
            try:
                s.send(hello[i:i + 1])
            except OSError:
                pass
        if i == 15:
            status = fresh_client_call(target)
        time.sleep(0.05)
    closed = finished = 0
    for s in silent + slow:
        got = recv_within(s, 0.001)
        closed += got is None
        finished += bool(got)  # a ServerHello: impossible before the whole ClientHello
        s.close()
    return status, closed, finished


def handshake_over(sock: socket.socket, context: ssl.SSLContext) -> ssl.SSLObject:
    """A TLS session on ``sock`` through memory buffers, handshake done: what is then
    written to ``sock`` by hand is raw TLS records."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            sock.sendall(outgoing.read())
            data = sock.recv(65536)
            if not data:
                raise ConnectionError("the server closed the connection in the handshake") from None
            incoming.write(data)
    sock.sendall(outgoing.read())
    return obj


def stalled_records(target, scale: int = 1) -> int:
    """20 connections without a certificate whose first record declares 16 KiB and
    brings 100 bytes, and 20 authenticated ones whose first record after the handshake
    declares 16,640 bytes (the most a TLS 1.3 record may) and brings 1,000; held 1 s.
    How many of the authenticated ones the server closed (a record it cannot yet
    decrypt is no reason to)."""
    rng = random.Random(3)
    held = []
    for _ in range(20 * scale):
        s = _connect(target)
        s.sendall(record_header(HANDSHAKE, 16384) + rng.randbytes(100))
        held.append(s)
    authenticated = []
    for _ in range(20 * scale):
        s = _connect(target)
        handshake_over(s, client_context(certs()))
        s.sendall(record_header(APPLICATION_DATA, 16384 + 256) + rng.randbytes(1000))
        authenticated.append(s)
    time.sleep(1.0)
    closed = sum(recv_within(s, 0.001) is None for s in authenticated)
    for s in held + authenticated:
        s.close()
    return closed
