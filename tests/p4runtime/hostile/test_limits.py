"""Each limit of ``ServerLimits``, set small on an h2 server (and on one behind mutual
TLS for the TLS front's), reached by a raw client: what the client sees, and that the
others are still served after."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time

import pytest

from p4target.p4runtime.limits import ServerLimits
from tests.p4runtime.hostile import attacks, tls_attacks
from tests.p4runtime.hostile.attacks import Frames, block, one_call, open_conn, read_all
from tests.p4runtime.hostile.harness import (CAPABILITIES, DATA, END_HEADERS, END_STREAM, HEADERS, ROOT, SETTINGS,
                                             frame, grpc_message, request_headers, serve)

LIMITS = {"max_connections": 6, "max_concurrent_streams": 4, "stall_seconds": 0.5, "max_pending_answer_bytes": 65536,
          "max_header_list_bytes": 4096, "max_receive_bytes": 100000, "max_queued_calls": 2, "max_workers": 3}
RESOURCE_EXHAUSTED, OK, REFUSED_STREAM = "8", "0", 7


def _served(transport: str, rt_config, limits: dict):
    """A server on ``transport`` with ``limits``, for the module; stopped after it."""
    served = serve(transport, rt_config, json.dumps(limits))
    yield served
    served.healthy.close()
    served.target.stop()


@pytest.fixture(scope="module")
def small(rt_config):
    yield from _served("h2", rt_config, LIMITS)


def test_bad_limits_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"ServerLimits.max_connections = 0: give a number greater than 0"):
        ServerLimits(max_connections=0)
    with pytest.raises(ValueError, match=r"ServerLimits.max_concurrent_streams = 2.5: give a whole number"):
        ServerLimits(max_concurrent_streams=2.5)
    with pytest.raises(ValueError, match=r"max_receive_bytes = 2147483648: at most 2 GiB - 1"):
        ServerLimits(max_receive_bytes=2**31)


@pytest.mark.parametrize("argv, message", [
    (["--grpc-max-streams", "0"], "argument --grpc-max-streams: '0' is not a whole number above 0"),
    (["--grpc-stall-seconds", "soon"], "argument --grpc-stall-seconds: 'soon' is not a number above 0"),
    (["--grpc-max-receive", "3000000000"], "--grpc-max-receive: at most 2 GiB - 1"),
])
def test_p4target_run_refuses_a_bad_limit(argv, message) -> None:
    run = subprocess.run([sys.executable, "-m", "p4target", "run", "--no-p4", "-i", "1@lo", *argv], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run
    assert message in run.stderr


def test_settings_advertise_the_limits(small) -> None:
    s = open_conn(small.target)
    f = Frames(s).read(1.0, lambda f: any(k == SETTINGS for k, *_ in f.frames))
    s.close()
    payload = next(p for k, flags, _, p in f.frames if k == SETTINGS and not flags)
    settings = dict(struct.unpack(">HI", payload[i:i + 6]) for i in range(0, len(payload), 6))
    assert settings[3] == 4  # SETTINGS_MAX_CONCURRENT_STREAMS
    assert settings[6] == 4096  # SETTINGS_MAX_HEADER_LIST_SIZE


def _accepted(target) -> bool:
    """A new connection gets the server's SETTINGS (it was not closed at once)."""
    try:
        s = open_conn(target)
    except OSError:  # closed before the preface was written
        return False
    f = Frames(s).read(1.0, lambda f: any(k == SETTINGS for k, *_ in f.frames))
    s.close()
    return any(k == SETTINGS for k, *_ in f.frames)


def test_connections_past_the_limit_are_closed(small) -> None:
    """10 connections with the healthy client's open, 6 the limit: the server closes
    at least 5 of the 10 at once (more while it has not yet seen earlier ones close)."""
    socks = [open_conn(small.target) for _ in range(10)]
    frames = [Frames(s).read(0.5, lambda f: any(k == SETTINGS for k, *_ in f.frames)) for s in socks]
    closed = sum(f.closed for f in frames)
    for s in socks:
        s.close()
    assert 5 <= closed <= 10, closed
    assert "connection(s) refused: 6 open already" in small.target.log()
    deadline = time.monotonic() + 5
    while not _accepted(small.target):  # the server has seen them close
        assert time.monotonic() < deadline, "no connection accepted after the others closed"
    small.healthy.check()


def test_a_stream_past_the_limit_is_refused(small) -> None:
    s = open_conn(small.target)
    head = block(request_headers())  # calls whose request never ends: open, no thread
    s.sendall(b"".join(frame(HEADERS, END_HEADERS, sid, head) for sid in (1, 3, 5, 7, 9)))
    f = Frames(s).read(2.0, lambda f: f.ended(9))
    s.close()
    assert f.status(9) == f"RST {REFUSED_STREAM}"
    assert not any(f.ended(sid) for sid in (1, 3, 5, 7)), [f.status(sid) for sid in (1, 3, 5, 7)]


def test_header_list_past_the_limit(small) -> None:
    pad = lambda n: [("x-pad", "v" * n)]  # noqa: E731
    assert one_call(small.target, request_headers(extra=pad(4500)), grpc_message(CAPABILITIES)) == RESOURCE_EXHAUSTED
    assert one_call(small.target, request_headers(extra=pad(3000)), grpc_message(CAPABILITIES)) == OK


def test_message_past_the_receive_limit(small) -> None:
    assert one_call(small.target, request_headers("Write"), grpc_message(b"\x00" * 100001)) == RESOURCE_EXHAUSTED
    small.healthy.check()


def test_an_answer_nobody_reads_is_reset_after_the_stall_time(small) -> None:
    s = open_conn(small.target, struct.pack(">HI", 4, 0))
    t0 = time.monotonic()
    s.sendall(frame(HEADERS, END_HEADERS, 1, block(request_headers("Read"))) +
              frame(DATA, END_STREAM, 1, grpc_message(read_all(5))))
    f = Frames(s).read(3.0, lambda f: f.ended(1))
    took = time.monotonic() - t0
    s.close()
    assert f.status(1) == f"RST {attacks.CANCEL}"
    assert 0.4 < took < 2.0, took


def test_calls_past_the_queue_limit_are_refused(small) -> None:
    """3 handler threads, each held by a StreamChannel, and 2 more StreamChannels
    waiting for one: the next is refused at once (sooner if a thread is still busy
    with an earlier test's call)."""
    head = block(request_headers("StreamChannel"))
    conns, refused_at = [], None
    for i in range(8):  # 3 per connection: under its stream limit
        if i % 3 == 0:
            conns.append(open_conn(small.target))
        sid = 1 + 2 * (i % 3)
        conns[-1].sendall(frame(HEADERS, END_HEADERS, sid, head))
        f = Frames(conns[-1]).read(0.3, lambda f, sid=sid: f.ended(sid))
        if f.ended(sid):
            assert f.status(sid) == RESOURCE_EXHAUSTED
            refused_at = i
            break
    for c in conns:
        c.close()
    assert refused_at is not None and refused_at <= 5, refused_at
    time.sleep(0.3)
    small.healthy.check()


# ---- the TLS front's limits ---------------------------------------------------------------
TLS_LIMITS = {"max_connections": 6, "handshake_seconds": 0.5}


@pytest.fixture(scope="module")
def small_tls(rt_config):
    yield from _served("tls", rt_config, TLS_LIMITS)


def test_a_handshake_not_done_in_time_is_closed(small_tls) -> None:
    """A client that connects and sends nothing is closed after 0.5 s (the default
    would be 10 s), one that sends part of its ClientHello too."""
    quiet = socket.create_connection(("127.0.0.1", small_tls.target.port), timeout=5)
    partial = socket.create_connection(("127.0.0.1", small_tls.target.port), timeout=5)
    partial.sendall(tls_attacks.client_hello()[:50])
    try:
        assert tls_attacks.closed_within(quiet, 5.0)
        assert tls_attacks.closed_within(partial, 5.0)
    finally:
        quiet.close()
        partial.close()
    small_tls.healthy.check()


def test_tls_connections_past_the_limit_are_closed(small_tls) -> None:
    """10 clients with valid certificates, 6 connections the limit and the healthy
    client's open: the front closes at least 5 before their handshake."""
    socks, refused = [], 0
    for _ in range(10):
        try:
            socks.append(small_tls.target.connect())
        except OSError:  # closed at once: the handshake fails
            refused += 1
    for s in socks:
        s.close()
    assert 5 <= refused <= 10, refused
    assert "TLS connection(s) refused: 6 open already" in small_tls.target.log()
    time.sleep(0.3)  # the front sees them close
    small_tls.healthy.check()
