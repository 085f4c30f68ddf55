"""The project's own gRPC transport under the P4Runtime server (``h2_server.H2Server``
on nghttp2, in ``p4target/accel/``), driven by real grpcio
clients over loopback with a small service of its own: where each kind of call runs,
what errors reach the client, and that stopping ends every call."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from typing import Iterator

import grpc
import pytest

from p4target.accel.h2_server import H2Server

# each transport, and the name of the thread its inline calls run on
TRANSPORTS = {"h2": (H2Server, "p4rt-h2")}

SERVICE = "t.Test"
BLOCK = 1 << 20  # one message of Blocks


def _parse(data: bytes) -> bytes:
    if data == b"bad":
        raise ValueError("not a request")
    return data


class Recorder:
    """Handlers of the test service; each records the thread that ran it."""

    def __init__(self) -> None:
        self.threads: dict[str, set[str]] = {}
        self.closed = threading.Event()
        self.ended = threading.Event()
        self.drain = threading.Event()

    def _seen(self, method: str) -> None:
        self.threads.setdefault(method, set()).add(threading.current_thread().name)

    def echo(self, request: bytes, context) -> bytes:
        self._seen("Echo")
        return b"echo:" + request

    def pooled(self, request: bytes, context) -> bytes:
        self._seen("Pooled")
        return b"pooled:" + request

    def fail(self, request: bytes, context) -> bytes:
        bad = {b"bad metadata": ("why", "caf\u00e9"),  # not ASCII, and not a -bin key
               b"bad key": ("why not?", "1"),  # not a name HTTP/2 carries
               b"bad value": ("why", "one\r\ntwo")}.get(request)  # a line break in a header
        if bad is not None:
            context.set_trailing_metadata((bad,))
            return b"never sent"
        if request == b"abort":
            context.set_trailing_metadata((("why-bin", b"\x01\x02"),))
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "refused on purpose")
        raise RuntimeError("a bug in the handler")

    def count(self, request: bytes, context) -> Iterator[bytes]:
        self._seen("Count")
        context.add_callback(self.ended.set)
        try:
            for i in range(int(request)):
                yield str(i).encode()
        finally:
            self.closed.set()

    def blocks(self, request: bytes, context) -> Iterator[bytes]:
        for i in range(int(request)):
            yield bytes((i % 256,)) * BLOCK

    def sink(self, requests: Iterator[bytes], context) -> bytes:
        """Takes nothing until ``self.drain`` is set, then counts what came."""
        assert self.drain.wait(30)
        return str(sum(1 for _ in requests)).encode()

    def jumbo(self, request: bytes, context) -> Iterator[bytes]:
        yield b"j" * int(request)

    def meta(self, request: bytes, context) -> bytes:
        return repr(sorted((k, v) for k, v in context.invocation_metadata() if k.startswith("x-"))).encode()

    def chat(self, requests: Iterator[bytes], context) -> Iterator[bytes]:
        self._seen("Chat")
        context.add_callback(self.ended.set)
        for request in requests:
            yield b"re:" + request


def _handlers(rec: Recorder) -> grpc.GenericRpcHandler:
    raw = {"request_deserializer": _parse, "response_serializer": bytes}
    return grpc.method_handlers_generic_handler(SERVICE, {
        "Echo": grpc.unary_unary_rpc_method_handler(rec.echo, **raw),
        "Pooled": grpc.unary_unary_rpc_method_handler(rec.pooled),  # no (de)serialisers: bytes in and out
        "Fail": grpc.unary_unary_rpc_method_handler(rec.fail, **raw),
        "Count": grpc.unary_stream_rpc_method_handler(rec.count, **raw),
        "Chat": grpc.stream_stream_rpc_method_handler(rec.chat, **raw),
        "Blocks": grpc.unary_stream_rpc_method_handler(rec.blocks, **raw),
        "Meta": grpc.unary_unary_rpc_method_handler(rec.meta, **raw),
        "Jumbo": grpc.unary_stream_rpc_method_handler(rec.jumbo, **raw),
        "Sink": grpc.stream_unary_rpc_method_handler(rec.sink, **raw),
    })


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request):
    return TRANSPORTS[request.param]


@pytest.fixture
def served(transport):
    rec = Recorder()
    server = transport[0](4, inline=(f"/{SERVICE}/Echo", f"/{SERVICE}/Fail", f"/{SERVICE}/Count"))
    server.add_generic_rpc_handlers((_handlers(rec),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield rec, server, channel, port
    finally:
        channel.close()
        assert server.stop(0.5).wait(10), "the server did not stop"


def _method(channel: grpc.Channel, name: str, kind: str = "unary_unary"):
    return getattr(channel, kind)(f"/{SERVICE}/{name}", request_serializer=bytes, response_deserializer=bytes)


def _refused(call, request: bytes, code: grpc.StatusCode) -> grpc.RpcError:
    """The error ``call(request)`` ends with, after checking its status code."""
    with pytest.raises(grpc.RpcError) as info:
        call(request)
    assert info.value.code() == code
    return info.value


def test_inline_unary_calls_run_on_the_poller_and_the_others_in_the_pool(served, transport) -> None:
    rec, _, channel, _ = served
    poller = transport[1]
    assert _method(channel, "Echo")(b"a") == b"echo:a"
    assert _method(channel, "Pooled")(b"b") == b"pooled:b"
    assert rec.threads["Echo"] == {poller}
    assert len(rec.threads["Pooled"]) == 1 and not rec.threads["Pooled"] & {poller}
    # a streaming method named inline still runs in the pool: it waits for its sends
    assert list(_method(channel, "Count", "unary_stream")(b"3")) == [b"0", b"1", b"2"]
    assert poller not in rec.threads["Count"]


def test_errors_reach_the_client_and_the_server_lives_on(served) -> None:
    _, _, channel, _ = served
    fail = _method(channel, "Fail")
    assert "a bug in the handler" in _refused(fail, b"x", grpc.StatusCode.UNKNOWN).details()
    refused = _refused(fail, b"abort", grpc.StatusCode.FAILED_PRECONDITION)
    assert refused.details() == "refused on purpose"
    assert dict(refused.trailing_metadata())["why-bin"] == b"\x01\x02"
    _refused(_method(channel, "Echo"), b"bad", grpc.StatusCode.INTERNAL)
    for bad in (b"bad metadata", b"bad key", b"bad value"):
        _refused(fail, bad, grpc.StatusCode.INTERNAL)
    _refused(channel.unary_unary(f"/{SERVICE}/Nothing"), b"", grpc.StatusCode.UNIMPLEMENTED)
    assert _method(channel, "Echo")(b"still") == b"echo:still"


def test_many_clients_at_once_each_get_their_own_answers(served) -> None:
    _, _, channel, port = served
    wrong: list[tuple[bytes, bytes]] = []

    def client(k: int) -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as own:
            echo = _method(own, "Echo")
            for i in range(200):
                want = f"{k}-{i}".encode()
                got = echo(want)
                if got != b"echo:" + want:
                    wrong.append((want, got))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    assert wrong == []


def test_a_cancelled_stream_closes_the_handler_and_runs_its_callbacks(served) -> None:
    rec, _, channel, _ = served
    responses = _method(channel, "Count", "unary_stream")(b"100000000")
    assert next(responses) == b"0"
    responses.cancel()
    assert rec.closed.wait(10), "the handler's generator was not closed"
    assert rec.ended.wait(10), "the callback did not run"


def test_bidirectional_stream_and_stop_with_it_open(served) -> None:
    rec, server, channel, _ = served
    outbox: list[bytes] = [b"one", b"two"]
    more = threading.Event()

    def requests() -> Iterator[bytes]:
        yield from outbox
        more.wait(30)  # keep the stream open until the server stops

    stream = _method(channel, "Chat", "stream_stream")(requests())
    assert [next(stream), next(stream)] == [b"re:one", b"re:two"]
    assert server.stop(0.2).wait(10), "stop did not end the open stream"
    with pytest.raises(grpc.RpcError):
        next(stream)
    assert rec.ended.is_set()
    more.set()


def test_a_stopped_server_frees_its_port(served, transport) -> None:
    _, server, _, port = served
    assert server.stop(0.2).wait(10)
    again = transport[0](1)
    try:
        assert again.add_insecure_port(f"127.0.0.1:{port}") == port
        again.start()
    finally:
        assert again.stop(0).wait(10)


def test_a_port_in_use_is_refused_and_the_unstarted_server_stops(served, transport) -> None:
    _, _, _, port = served
    second = transport[0](1, options=[("grpc.so_reuseport", 0)])  # options reach the core: no sharing
    with pytest.raises(RuntimeError, match=f"cannot bind 127.0.0.1:{port}"):
        second.add_insecure_port(f"127.0.0.1:{port}")
    assert second.stop(0.5).wait(1)


class _BrokenLookup(grpc.GenericRpcHandler):
    def service(self, handler_call_details):
        if handler_call_details.method.endswith("/Boom"):
            raise RuntimeError("a bug in a generic handler")
        return None


def test_unknown_methods_are_not_kept_and_a_broken_lookup_fails_its_call_only(served) -> None:
    _, server, channel, _ = served
    server.add_generic_rpc_handlers((_BrokenLookup(),))
    for i in range(50):
        _refused(channel.unary_unary(f"/{SERVICE}/Nothing{i}"), b"", grpc.StatusCode.UNIMPLEMENTED)
    assert _method(channel, "Echo")(b"x") == b"echo:x"
    assert server._handlers.known() == {f"/{SERVICE}/Echo".encode()}  # only methods that exist are kept
    _refused(channel.unary_unary(f"/{SERVICE}/Boom"), b"", grpc.StatusCode.UNKNOWN)
    assert _method(channel, "Echo")(b"y") == b"echo:y"


def test_compressed_and_large_requests_arrive_whole(served) -> None:
    _, _, _, port = served
    big = bytes(range(256)) * 4096  # 1 MiB
    with grpc.insecure_channel(f"127.0.0.1:{port}", compression=grpc.Compression.Gzip) as gz:
        assert _method(gz, "Echo")(b"zipped" * 1000) == b"echo:" + b"zipped" * 1000
        assert _method(gz, "Pooled")(big) == b"pooled:" + big


def test_a_long_stream_of_large_answers_arrives_whole_and_in_order(served) -> None:
    # 24 MiB, more than a transport keeps queued for one stream: the handler's thread
    # waits for the client to take them (h2_server's SEND_LIMIT is 4 MiB)
    _, _, channel, _ = served
    got = list(_method(channel, "Blocks", "unary_stream")(b"24"))
    assert [len(b) for b in got] == [BLOCK] * 24
    assert [b[0] for b in got] == list(range(24)) and all(b.count(b[0]) == BLOCK for b in got)


def test_one_answer_larger_than_the_send_limit_goes_out(served) -> None:
    _, _, _, port = served
    size = 6 << 20  # above h2_server's 4 MiB SEND_LIMIT on its own
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 8 << 20)]) as big:
        (got,) = list(_method(big, "Jumbo", "unary_stream")(str(size).encode(), timeout=30))
    assert got == b"j" * size


def test_a_client_stream_its_handler_does_not_read_is_held_back(served) -> None:
    # flow control: while the handler takes nothing, the client cannot push much more than
    # the transport's window (h2_server: 1 MiB a stream) plus the socket's buffers
    rec, _, channel, _ = served
    sent = 0

    def requests() -> Iterator[bytes]:
        nonlocal sent
        for _ in range(1000):  # 64 MiB in all
            sent += 1
            yield b"s" * 65536

    answer = _method(channel, "Sink", "stream_unary").future(requests(), timeout=60)
    time.sleep(2)
    held_back = sent
    rec.drain.set()
    assert answer.result() == b"1000"
    assert held_back < 300, f"{held_back} of 1000 messages were taken with nothing reading them"


def test_metadata_reaches_the_handler(served) -> None:
    _, _, channel, _ = served
    answer = _method(channel, "Meta")(b"", metadata=(("x-plain", "v 1"), ("x-raw-bin", b"\x00\xff")))
    assert answer == repr([("x-plain", "v 1"), ("x-raw-bin", b"\x00\xff")]).encode()


def test_a_request_over_the_size_limit_is_refused_and_the_next_served(transport) -> None:
    rec = Recorder()
    server = transport[0](2, options=[("grpc.max_receive_message_length", 1000)])
    server.add_generic_rpc_handlers((_handlers(rec),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            _refused(_method(channel, "Echo"), b"x" * 2000, grpc.StatusCode.RESOURCE_EXHAUSTED)
            assert _method(channel, "Echo")(b"x" * 900) == b"echo:" + b"x" * 900
        with grpc.insecure_channel(f"127.0.0.1:{port}", compression=grpc.Compression.Gzip) as gz:
            # under 1,000 bytes on the wire, 900,000 inflated: refused after inflating 1,001
            bomb = _refused(_method(gz, "Echo"), bytes(900_000), grpc.StatusCode.RESOURCE_EXHAUSTED)
            if transport[0] is H2Server:
                assert bomb.details() == "Received message larger than max (more than 1000 when decompressed)"
    finally:
        assert server.stop(0.5).wait(10)


def test_stop_refuses_new_connections_and_waits_for_running_handlers(served) -> None:
    rec, server, _, port = served
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        sink = _method(channel, "Sink", "stream_unary").future(iter([b"a", b"b"]), timeout=30)
        time.sleep(0.3)  # the handler is running (and waiting for drain)
        stopped = server.stop(0.2)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as late:
            _refused(lambda r: _method(late, "Echo")(r, timeout=5), b"late", grpc.StatusCode.UNAVAILABLE)
        assert not stopped.wait(0.5), "stopped while a handler was still running"
        rec.drain.set()
        assert stopped.wait(10)
        with pytest.raises(grpc.RpcError):
            sink.result()


def test_a_client_that_does_not_speak_http2_is_dropped_and_the_server_lives_on(served) -> None:
    _, _, channel, port = served
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 16)
        while raw.recv(4096):  # whatever it answers, the server closes the connection
            pass
    assert _method(channel, "Echo")(b"after") == b"echo:after"


CLIENT_THAT_DIES = """
import sys, threading, grpc
channel = grpc.insecure_channel(sys.argv[1])
chat = channel.stream_stream("/%s/Chat", request_serializer=bytes, response_deserializer=bytes)
hold = threading.Event()
def requests():
    yield b"hello"
    hold.wait()
stream = chat(requests())
print(next(stream).decode(), flush=True)
hold.wait()
""" % SERVICE


def test_a_client_killed_with_a_stream_open_ends_that_stream(served) -> None:
    # no RST_STREAM, no GOAWAY: only the kernel closing the dead process's socket
    rec, _, channel, port = served
    client = subprocess.Popen([sys.executable, "-c", CLIENT_THAT_DIES, f"127.0.0.1:{port}"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout.readline().strip() == "re:hello"
        client.kill()
        client.wait(10)
        assert rec.ended.wait(10), "the server did not see the connection close"
    finally:
        client.kill()
        client.wait(10)
    assert _method(channel, "Echo")(b"after") == b"echo:after"


def _loop_cpu_after_one_call(spin_us: int) -> float:
    """CPU seconds the H2Server's loop thread uses in the 0.5 s after answering one call."""
    rec = Recorder()
    server = H2Server(2, inline=(f"/{SERVICE}/Echo",), spin_us=spin_us)
    server.add_generic_rpc_handlers((_handlers(rec),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        clock = time.pthread_getcpuclockid(server._thread.ident)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            assert _method(channel, "Echo")(b"warm") == b"echo:warm"
            time.sleep(0.5)  # any spin of the warm-up call is over
            before = time.clock_gettime(clock)
            assert _method(channel, "Echo")(b"x") == b"echo:x"
            time.sleep(0.5)
            return time.clock_gettime(clock) - before
    finally:
        assert server.stop(0.5).wait(10)


def test_the_h2_loop_polls_after_a_request_only_when_asked() -> None:
    # 200 ms of polling (yielding the CPU between polls) against none, measured in one
    # run: the loop thread's CPU time after one call is many times larger when it polls,
    # however loaded the machine (the figures themselves: bench/h2_spin_cpu.py)
    polling = _loop_cpu_after_one_call(200_000)
    blocking = _loop_cpu_after_one_call(0)
    assert polling > 10 * blocking and polling > 0, (polling, blocking)
