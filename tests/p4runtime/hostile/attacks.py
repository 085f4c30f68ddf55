"""The attacks, one function each: ``attack(target, scale)`` misbehaves against the
server and returns what the server answered (for the test to check). ``scale``
multiplies the counts: 1 is the size the test suite runs (small, and still the size
that broke the server before it was mended); ``bench/p4runtime_hostile.py`` runs
larger ones.

Frames the server must refuse are written by hand (``frame``) with HPACK blocks from
the ``hpack`` package (``h2``'s); what the server answers is read back with
``Frames``. The recorded calls that ``random_mutation`` mutates are ``h2``'s client
session's own bytes.
"""

from __future__ import annotations

import gzip
import random
import socket
import ssl
import struct
import time
from functools import lru_cache

import h2.config
import h2.connection
import hpack
from finsy.proto.p4.v1 import p4runtime_pb2

from tests.p4runtime.hostile.harness import (CAPABILITIES, CONTINUATION, DATA, END_HEADERS, END_STREAM, HEADERS,
                                             PING, PREFACE, RST_STREAM, SETTINGS, WINDOW_UPDATE, frame,
                                             grpc_message, recv_within, request_headers)

CANCEL, FRAME_SIZE_ERROR, PROTOCOL_ERROR, FLOW_CONTROL_ERROR = 8, 6, 1, 3


def read_all(copies: int = 1) -> bytes:
    """A wildcard Read of every table (the healthy client filled exact_t), ``copies``
    times in one request: an answer ``copies`` times as large."""
    req = p4runtime_pb2.ReadRequest(device_id=1)
    for _ in range(copies):
        req.entities.add().table_entry.SetInParent()
    return req.SerializeToString()


def block(headers: list) -> bytes:
    """An HPACK block that any fresh or used decoder reads the same (literals and
    static-table references only: a fresh encoder's first block)."""
    return hpack.Encoder().encode(headers)


def open_conn(target, settings: bytes = b"") -> socket.socket:
    """A connection past its preface and SETTINGS (``settings``: its entries)."""
    sock = target.connect()
    sock.sendall(PREFACE + frame(SETTINGS, 0, 0, settings))
    return sock


class Frames:
    """What the server sent on a hand-driven connection: its frames, decoded headers."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.frames: list[tuple[int, int, int, bytes]] = []
        self.closed = False
        self.decoder = hpack.Decoder()

    def read(self, timeout: float = 2.0, until=None) -> "Frames":
        end = time.monotonic() + timeout
        while not self.closed and not (until and until(self)):
            left = end - time.monotonic()
            if left <= 0:
                break
            data = recv_within(self.sock, left)
            if data is None:
                self.closed = True
                break
            if not data:
                break
            self.buf += data
            while len(self.buf) >= 9:
                n = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + n:
                    break
                kind, flags, sid = self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
                self.frames.append((kind, flags, sid, self.buf[9:9 + n]))
                self.buf = self.buf[9 + n:]
        return self

    def goaway(self) -> int | None:
        """The error code of the server's GOAWAY, if it sent one."""
        return next((int.from_bytes(p[4:8], "big") for k, _, _, p in self.frames if k == 7), None)

    def ended(self, sid: int) -> bool:
        return any(s == sid and (k == RST_STREAM or (k == HEADERS and f & END_STREAM))
                   for k, f, s, _ in self.frames)

    def status(self, sid: int) -> str | None:
        """grpc-status of stream ``sid``, ``"RST n"`` when reset, None without an answer.
        Reads every HEADERS frame in order (the decoder's table is the connection's)."""
        out = None
        for kind, flags, s, payload in self.frames:
            if kind == HEADERS:
                if flags & 0x8:  # PADDED
                    payload = payload[1:len(payload) - payload[0]]
                if flags & 0x20:  # PRIORITY
                    payload = payload[5:]
                headers = dict(self.decoder.decode(payload, raw=True)) if s else {}
                if s == sid and b"grpc-status" in headers:
                    out = headers[b"grpc-status"].decode()
            elif kind == RST_STREAM and s == sid and out is None:
                out = f"RST {int.from_bytes(payload[:4], 'big')}"
        self.decoder = hpack.Decoder()  # decoded from the start again on the next call
        return out


def _send(sock: socket.socket, data: bytes) -> bool:
    """Write ``data``; False when the server has closed the connection (an attack may
    get itself disconnected half-way: that is an answer, not an error)."""
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


def _hold_and_close(socks: list[socket.socket], seconds: float) -> None:
    time.sleep(seconds)
    for s in socks:
        s.close()


def _closed_by_server(sock: socket.socket, timeout: float = 2.0) -> bool:
    """The server closed (or sent GOAWAY and closed) within ``timeout``."""
    f = Frames(sock).read(timeout)
    return f.closed or f.goaway() is not None


# ---- prefaces and frames ---------------------------------------------------------------
def garbage_preface(target, scale: int = 1) -> int:
    """Connections that open with random bytes (one with an HTTP/1.1 request); how
    many the server closed."""
    rng = random.Random(1)
    socks = []
    for i in range(20 * scale):
        s = target.connect()
        _send(s, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" if i == 0 else rng.randbytes(1024))
        socks.append(s)
    closed = sum(_closed_by_server(s) for s in socks)
    _hold_and_close(socks, 0)
    return closed


def truncated_preface(target, scale: int = 1) -> None:
    """Connections that send part of the preface and wait."""
    socks = []
    for i in range(20 * scale):
        s = target.connect()
        _send(s, PREFACE[:1 + i % (len(PREFACE) - 1)])
        socks.append(s)
    _hold_and_close(socks, 1.0)


def truncated_frame(target, scale: int = 1) -> None:
    """A HEADERS frame whose header declares 16,000 bytes, 100 of them sent; held."""
    socks = []
    for _ in range(10 * scale):
        s = open_conn(target)
        _send(s, frame(HEADERS, END_HEADERS, 1, b"\x00" * 100, length=16000))
        socks.append(s)
    _hold_and_close(socks, 1.0)


def oversized_frame(target, scale: int = 1) -> list[bool]:
    """Frames above the 16 KiB SETTINGS_MAX_FRAME_SIZE (up to 16 MiB declared): each
    connection is ended by the server."""
    out = []
    for length in (16385, 1 << 20, (1 << 24) - 1)[:3 * scale]:
        s = open_conn(target)
        _send(s, frame(DATA, 0, 1, b"\x00" * min(length, 65536), length=length))
        out.append(_closed_by_server(s))
        s.close()
    return out


BAD_FRAMES = {
    "DATA on stream 0": frame(DATA, 0, 0, b"x"),
    "HEADERS on an even stream": frame(HEADERS, END_HEADERS | END_STREAM, 2, block(request_headers())),
    "WINDOW_UPDATE of 3 bytes": frame(WINDOW_UPDATE, 0, 0, b"\x00\x00\x01"),
    "PING of 7 bytes": frame(PING, 0, 0, b"\x00" * 7),
    "SETTINGS of 5 bytes": frame(SETTINGS, 0, 0, b"\x00" * 5),
    "SETTINGS ACK with a payload": frame(SETTINGS, 1, 0, b"\x00" * 6),
    "RST_STREAM on an idle stream": frame(RST_STREAM, 0, 7, b"\x00\x00\x00\x08"),
    "CONTINUATION without HEADERS": frame(CONTINUATION, END_HEADERS, 1, b"\x82"),
    "PUSH_PROMISE from a client": frame(5, END_HEADERS, 1, b"\x00\x00\x00\x02\x82"),
    "SETTINGS_ENABLE_PUSH=2": frame(SETTINGS, 0, 0, struct.pack(">HI", 2, 2)),
    "SETTINGS_INITIAL_WINDOW_SIZE=2^31": frame(SETTINGS, 0, 0, struct.pack(">HI", 4, 1 << 31)),
    "HEADERS depending on itself": frame(HEADERS, END_HEADERS | END_STREAM | 0x20, 1,
                                         struct.pack(">IB", 1, 16) + block(request_headers())),
}


def bad_frames_after_preface(target, scale: int = 1) -> dict[str, bool]:
    """Each frame of ``BAD_FRAMES`` after a valid preface, on a connection of its own:
    whether the server ended that connection (RFC 9113 says it must, for each)."""
    out = {}
    for name, data in BAD_FRAMES.items():
        s = open_conn(target)
        _send(s, data)
        out[name] = _closed_by_server(s)
        s.close()
    return out


def unknown_frame_type(target, scale: int = 1) -> str | None:
    """Frames of an unknown type are ignored (RFC 9113 5.5): a call after them on the
    same connection is answered."""
    s = open_conn(target)
    _send(s, frame(0xEE, 0xFF, 0, b"\x00" * 100) + frame(0xEE, 0, 1, b"x") +
              frame(HEADERS, END_HEADERS, 1, block(request_headers())) +
              frame(DATA, END_STREAM, 1, grpc_message(CAPABILITIES)))
    f = Frames(s).read(2.0, lambda f: f.ended(1))
    s.close()
    return f.status(1)


def settings_flood(target, scale: int = 1) -> bool:
    """20,000 SETTINGS frames, their acknowledgements never read; whether the server
    ended the connection."""
    s = open_conn(target)
    data = frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 100)) * (20000 * scale)
    _send(s, data)
    closed = _closed_by_server(s)
    s.close()
    return closed


def ping_flood(target, scale: int = 1) -> bool:
    """20,000 PINGs, their acknowledgements never read; whether the server ended the
    connection."""
    s = open_conn(target)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    _send(s, b"".join(frame(PING, 0, 0, struct.pack(">Q", i)) for i in range(20000 * scale)))
    time.sleep(0.5)
    closed = _closed_by_server(s)
    s.close()
    return closed


def window_update_zero(target, scale: int = 1) -> tuple[bool, str | None]:
    """WINDOW_UPDATE 0 on the connection (the server ends it) and on an open stream
    (the server resets the stream or, stricter, ends the connection)."""
    s = open_conn(target)
    _send(s, frame(WINDOW_UPDATE, 0, 0, b"\x00\x00\x00\x00"))
    conn_ended = _closed_by_server(s)
    s.close()
    s = open_conn(target)
    _send(s, frame(HEADERS, END_HEADERS, 1, block(request_headers("Read"))) +
              frame(WINDOW_UPDATE, 0, 1, b"\x00\x00\x00\x00"))
    f = Frames(s).read(2.0, lambda f: f.ended(1))
    s.close()
    return conn_ended, f.status(1) or ("connection ended" if f.closed or f.goaway() is not None else None)


def window_update_overflow(target, scale: int = 1) -> tuple[bool, str | None]:
    """Windows pushed past 2^31 - 1: on the connection (ended, FLOW_CONTROL_ERROR) and
    on a stream (reset)."""
    s = open_conn(target)
    _send(s, frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 0x7FFFFFFF)) * 2)
    f = Frames(s).read(2.0)
    conn_ended = f.closed or f.goaway() is not None
    s.close()
    s = open_conn(target)
    _send(s, frame(HEADERS, END_HEADERS, 1, block(request_headers("Read"))) +
              frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 0x7FFFFFFF)) * 2)
    f = Frames(s).read(2.0, lambda f: f.ended(1))
    s.close()
    return conn_ended, f.status(1)


def slowloris(target, scale: int = 1) -> None:
    """30 connections that send their preface and a call a byte every 50 ms."""
    data = (PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block(request_headers())) +
            frame(DATA, END_STREAM, 1, grpc_message(CAPABILITIES)))
    socks = [target.connect() for _ in range(30 * scale)]
    for i in range(30):
        for s in socks:
            try:
                s.send(data[i:i + 1])
            except OSError:
                pass
        time.sleep(0.05)
    _hold_and_close(socks, 0)


def held_connections(target, scale: int = 1) -> int:
    """500 connections, each past its preface, held open while the healthy client calls."""
    socks = [open_conn(target) for _ in range(500 * scale)]
    time.sleep(1.0)
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            alive += s.recv(65536) != b""
        except (BlockingIOError, ssl.SSLWantReadError):
            alive += 1
        except OSError:
            pass
    _hold_and_close(socks, 0)
    return alive


# ---- header blocks ----------------------------------------------------------------------
def _continued(target, headers_block: bytes, sid: int = 1, chunk: int = 16384,
               sock: socket.socket | None = None) -> socket.socket:
    """``headers_block`` as HEADERS + CONTINUATION frames of ``chunk`` bytes on a stream."""
    s = sock or open_conn(target)
    parts = [headers_block[i:i + chunk] for i in range(0, len(headers_block), chunk)] or [b""]
    data = b"".join(frame(HEADERS if i == 0 else CONTINUATION, END_HEADERS if i == len(parts) - 1 else 0,
                          sid, p) for i, p in enumerate(parts))
    _send(s, data)
    return s


def header_block_1mb(target, scale: int = 1) -> str | None:
    """A call whose header block is 1 MB of literal headers (in CONTINUATION frames):
    refused (RESOURCE_EXHAUSTED, or its connection ended), not stored."""
    pad = [(f"x-pad-{i}", "v" * 1000) for i in range(1000 * scale)]
    s = _continued(target, block(request_headers(extra=pad)))
    _send(s, frame(DATA, END_STREAM, 1, grpc_message(CAPABILITIES)))
    f = Frames(s).read(2.0, lambda f: f.ended(1))
    s.close()
    return f.status(1) if not (f.closed or f.goaway() is not None) else "connection ended"


def continuation_flood(target, scale: int = 1) -> bool:
    """HEADERS without END_HEADERS and then 10,000 CONTINUATION frames, one header
    each: the server ends the connection."""
    s = open_conn(target)
    enc = hpack.Encoder()
    _send(s, frame(HEADERS, 0, 1, enc.encode(request_headers())))
    _send(s, b"".join(frame(CONTINUATION, 0, 1, b"\x00\x01a\x01b") for _ in range(10000 * scale)))
    closed = _closed_by_server(s)
    s.close()
    return closed


def _hpack_int(value: int, prefix_bits: int, first: int) -> bytes:
    top = (1 << prefix_bits) - 1
    if value < top:
        return bytes((first | value,))
    out, value = [first | top], value - top
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def hpack_bomb(target, scale: int = 1) -> list[str | None]:
    """A 4,000-byte header entered into the dynamic table, then each call's block (a
    HEADERS and 8 CONTINUATION frames, 147 KB) refers to it about 147,000 times:
    560 MB of headers per call decoded. Each call is refused (RESOURCE_EXHAUSTED)."""
    value = b"v" * 4000
    insert = b"\x40" + _hpack_int(5, 7, 0) + b"x-big" + _hpack_int(len(value), 7, 0) + value
    s = open_conn(target)
    statuses = []
    for i in range(4 * scale):
        sid = 1 + 2 * i
        head = block(request_headers()) + (insert if i == 0 else b"")
        refs = b"\xbe" * (9 * 16384 - len(head))  # index 62: the newest dynamic entry
        _continued(target, head + refs, sid, sock=s)
        _send(s, frame(DATA, END_STREAM, sid, grpc_message(CAPABILITIES)))
    f = Frames(s).read(5.0, lambda f: all(f.ended(1 + 2 * i) for i in range(4 * scale)))
    for i in range(4 * scale):
        statuses.append(f.status(1 + 2 * i))
    s.close()
    return statuses


# ---- calls ------------------------------------------------------------------------------
PSEUDO_HEADER_CASES = {
    "no :path": [(":method", "POST"), (":scheme", "http"), (":authority", "x"), ("content-type", "application/grpc")],
    "no :method": [(":scheme", "http"), (":path", "/p4.v1.P4Runtime/Capabilities"), ("content-type",
                                                                                       "application/grpc")],
    "no :scheme": [(":method", "POST"), (":path", "/p4.v1.P4Runtime/Capabilities"), ("content-type",
                                                                                       "application/grpc")],
    "unknown pseudo-header": request_headers() + [(":foo", "bar")],
    "pseudo-header after a field": [("content-type", "application/grpc"), (":method", "POST"), (":scheme", "http"),
                                    (":path", "/p4.v1.P4Runtime/Capabilities")],
    "two :path": request_headers() + [(":path", "/p4.v1.P4Runtime/Write")],
    "empty :path": request_headers(path=""),
    "upper-case name": request_headers() + [("X-Upper", "1")],
    "connection header": request_headers() + [("connection", "close")],
    "response pseudo-header": request_headers() + [(":status", "200")],
    "path without a method": request_headers(path="/p4.v1.P4Runtime/"),
    "unknown method": request_headers(path="/p4.v1.P4Runtime/Nope"),
}


def bad_pseudo_headers(target, scale: int = 1) -> dict[str, str | None]:
    """One call per case of ``PSEUDO_HEADER_CASES`` (each on a connection of its
    own); what each got: a status, a reset or the connection ended."""
    out = {}
    for name, headers in PSEUDO_HEADER_CASES.items():
        s = open_conn(target)
        _send(s, frame(HEADERS, END_HEADERS, 1, block(headers)) +
                  frame(DATA, END_STREAM, 1, grpc_message(CAPABILITIES)))
        f = Frames(s).read(2.0, lambda f: f.ended(1))
        out[name] = f.status(1) or ("connection ended" if f.closed or f.goaway() is not None else None)
        s.close()
    return out


def one_call(target, headers: list, data: bytes, timeout: float = 2.0) -> str | None:
    """One call on its own connection (hand-written frames); its grpc-status. A body
    past HTTP/2's initial 64 KiB windows waits for the server's larger ones: its
    SETTINGS (acknowledged: they apply from then) and the connection's WINDOW_UPDATE,
    at most a second."""
    s = open_conn(target)
    f = Frames(s)
    if len(data) > 65535:
        f.read(1.0, lambda f: {(k, flags) for k, flags, sid, _ in f.frames if sid == 0} >= {(SETTINGS, 0),
                                                                                           (WINDOW_UPDATE, 0)})
        _send(s, frame(SETTINGS, 1, 0))
    _send(s, frame(HEADERS, END_HEADERS, 1, block(headers)))
    for i in range(0, max(len(data), 1), 16384):
        if not _send(s, frame(DATA, END_STREAM if i + 16384 >= len(data) else 0, 1, data[i:i + 16384])):
            break  # refused before the whole body was sent
    f.read(timeout, lambda f: f.ended(1))
    s.close()
    return f.status(1)


def non_post(target, scale: int = 1) -> dict[str, str | None]:
    """Capabilities asked with GET, PUT and HEAD: refused, not answered."""
    return {m: one_call(target, request_headers(http_method=m), grpc_message(CAPABILITIES))
            for m in ("GET", "PUT", "HEAD")}


def non_grpc_content_type(target, scale: int = 1) -> dict[str, str | None]:
    return {ct: one_call(target, request_headers(content_type=ct), grpc_message(CAPABILITIES))
            for ct in ("application/json", "text/plain", "application/grpc-web")}


def stream_ends_inside_a_message(target, scale: int = 1) -> str | None:
    """The request stream ends 3 bytes into a message's 5-byte prefix."""
    return one_call(target, request_headers(), b"\x00\x00\x00")


def compressed_without_encoding(target, scale: int = 1) -> str | None:
    """The compressed flag set and no grpc-encoding header."""
    return one_call(target, request_headers(), grpc_message(gzip.compress(CAPABILITIES), flag=1))


def compressed_unknown_encoding(target, scale: int = 1) -> str | None:
    """grpc-encoding: br (not one the server accepts), the compressed flag set."""
    return one_call(target, request_headers(extra=[("grpc-encoding", "br")]),
                    grpc_message(b"\x8b\x00\x80", flag=1))


@lru_cache(maxsize=4)
def _bomb(mb: int) -> bytes:
    return gzip.compress(bytes(mb << 20), compresslevel=9)


def gzip_bomb(target, scale: int = 1) -> str | None:
    """A Write whose 190 KB gzip body inflates to 192 MB: refused past the receive
    limit, without inflating the rest."""
    return one_call(target, request_headers("Write", extra=[("grpc-encoding", "gzip")]),
                    grpc_message(_bomb(192 * scale), flag=1), timeout=5.0)


def rapid_reset(target, scale: int = 1) -> int:
    """5 connections x 2,000 streams, each HEADERS + DATA (a wildcard Read of the
    1,000-entry table, 4 times: 4,000 entries) + RST_STREAM(CANCEL), written as fast as
    the socket takes them; how many connections the server ended (nghttp2 ends one
    past its reset rate)."""
    head = block(request_headers("Read"))
    body = grpc_message(read_all(4))
    socks = []
    for _ in range(5 * scale):
        s = open_conn(target)
        s.settimeout(5)
        data = b"".join(frame(HEADERS, END_HEADERS, sid, head) + frame(DATA, END_STREAM, sid, body) +
                        frame(RST_STREAM, 0, sid, struct.pack(">I", CANCEL)) for sid in range(1, 4000, 2))
        _send(s, data)
        socks.append(s)
    # a loaded machine's server may take a while to reach the last connection's
    # resets: up to 5 s for all of them (a server that ends none costs the 5 s once)
    end = time.monotonic() + 5.0
    ended = sum(_closed_by_server(s, max(0.2, end - time.monotonic())) for s in socks)
    _hold_and_close(socks, 0)
    return ended


def zero_window_large_answers(target, scale: int = 1, streams: int = 33, copies: int = 15) -> int:
    """SETTINGS_INITIAL_WINDOW_SIZE=0 and ``streams`` Reads of ``copies`` wildcard
    entities each (``read_all``), whose answers are never let through: the attacker
    reads the frames the server sends (headers only: the windows allow no DATA) and
    opens no window. Held until the server has begun to answer every Read (up to
    5 s), then longer than the healthy client's deadline. How many Reads the server
    began to answer (response headers, not a trailers-only refusal)."""
    s = open_conn(target, struct.pack(">HI", 4, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    head = block(request_headers("Read"))
    body = grpc_message(read_all(copies))
    sids = range(1, 2 * streams * scale, 2)
    _send(s, b"".join(frame(HEADERS, END_HEADERS, sid, head) + frame(DATA, END_STREAM, sid, body) for sid in sids))

    def answered(f: Frames) -> set[int]:
        return {sid for kind, flags, sid, _ in f.frames if kind == HEADERS and not flags & END_STREAM}

    f = Frames(s).read(5.0, lambda f: len(answered(f)) >= len(sids))
    time.sleep(2.5)  # longer than the healthy client's deadline
    s.close()
    return len(answered(f) & set(sids))


def deadline(target, scale: int = 1) -> str | None:
    """grpc-timeout 300m on a Read whose answer cannot leave (zero window): the call
    ends at its deadline (DEADLINE_EXCEEDED, or reset)."""
    s = open_conn(target, struct.pack(">HI", 4, 0))
    _send(s, frame(HEADERS, END_HEADERS, 1, block(request_headers("Read", extra=[("grpc-timeout", "300m")]))) +
              frame(DATA, END_STREAM, 1, grpc_message(read_all(15))))
    t0 = time.monotonic()
    f = Frames(s).read(3.0, lambda f: f.ended(1))
    took = time.monotonic() - t0
    s.close()
    status = f.status(1)
    return status if took < 2.0 else f"{status} after {took:.1f} s"


def far_deadlines(target, scale: int = 1) -> list[str | None]:
    """Calls with deadlines past what a C int of milliseconds holds (2147484S, 25 days,
    up to 99999999H, 11,000 years), their requests never ended, then one with 0n: no
    timer may overflow into a busy loop or a dead one. What each got (the 0n call
    DEADLINE_EXCEEDED, the others nothing yet)."""
    s = open_conn(target)
    values = ("99999999H", "99999999M", "99999999S", "2147484S", "0n")
    for i, value in enumerate(values):
        _send(s, frame(HEADERS, END_HEADERS, 1 + 2 * i, block(request_headers(extra=[("grpc-timeout", value)]))))
    f = Frames(s).read(1.0)
    s.close()
    return [f.status(1 + 2 * i) for i in range(len(values))]


# ---- random mutation of recorded calls -----------------------------------------------------
def recorded_calls() -> list[bytes]:
    """Whole client transcripts (preface to the end of one call) of Capabilities,
    GetForwardingPipelineConfig, a Read and a Write, as the h2 client writes them."""
    out = []
    get = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1).SerializeToString()
    write = p4runtime_pb2.WriteRequest(device_id=1, updates=[p4runtime_pb2.Update(type=1)]).SerializeToString()
    for method, body in (("Capabilities", CAPABILITIES), ("GetForwardingPipelineConfig", get), ("Read", read_all()),
                         ("Write", write)):
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        conn.send_headers(1, request_headers(method, extra=[("grpc-timeout", "1S")]))
        conn.send_data(1, grpc_message(body), end_stream=True)
        out.append(conn.data_to_send())
    return out


def mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(5)
        i = rng.randrange(len(b)) if b else 0
        if kind == 0 and b:
            b[i] = rng.randrange(256)
        elif kind == 1 and b:
            b[i] ^= 1 << rng.randrange(8)
        elif kind == 2:
            b[i:i] = rng.randbytes(rng.randint(1, 8))
        elif kind == 3 and b:
            del b[i:i + rng.randint(1, 8)]
        elif kind == 4 and b:  # a length or flags field somewhere past the preface: 0xFF or 0x80
            b[i] = rng.choice((0x00, 0x7F, 0x80, 0xFF))
    return bytes(b)


def random_mutation(target, scale: int = 1, count: int = 2000, seed: int = 7) -> int:
    """``count`` mutated transcripts (``mutate``: 1-4 byte-level changes each), each on
    a connection of its own, answered or not; how many got any bytes back."""
    rng = random.Random(seed)
    calls = recorded_calls()
    answered = 0
    for _ in range(count * scale):
        data = mutate(rng, rng.choice(calls))
        s = target.connect()
        try:
            s.sendall(data)
            s.settimeout(0.02)
            answered += bool(s.recv(65536))
        except OSError:
            pass
        s.close()
    return answered
