"""A gRPC server on nghttp2 (``h2_loop.pyx``) that answers short unary calls on its loop thread.

Why: for single-entry Writes, where the P4Runtime work is a few microseconds, most
of the server's CPU goes to the gRPC server under it: ``grpc.server`` hands every call
to a worker thread through grpcio's core. An HTTP/2 loop on nghttp2, a small,
well-kept C library, that answers a Write on the thread that read it spends several
times less per call (docs/performance.md, "The transport").

How: one thread ("p4rt-h2") runs the compiled loop (epoll, one nghttp2 session per
connection, gRPC's message framing). It calls back here on that thread; a short unary
method (``inline``: Write, Capabilities) is answered there the moment its request is
whole, the answer and its status leaving in the same socket write. Every other call
(streams, server-streaming Reads, SetForwardingPipelineConfig, which compiles) runs in
a pool thread, whose responses the loop sends as nghttp2's flow control allows. An
inline handler holds up the other calls while it runs.

What it supports is what the P4Runtime server uses: insecure HTTP/2 (as ``grpc.server``
with ``add_insecure_port``), requests compressed with gzip or deflate, answers not
compressed, metadata both ways, the errors ``grpc.server`` gives (``grpc_calls``),
``grpc-timeout`` deadlines and the limits of ``limits.ServerLimits``. A call that is
reset, cancelled or past its deadline before a handler thread takes it is dropped; a
response-streaming one stops at its next message; one whose client does not read its
answer gives its thread back (``Stream.when_drained``) until the client does.

The loop is a C extension, built once into the native cache (``make native``, or at
the first server that needs it) from ``h2_loop.pyx`` with Cython and nghttp2's headers
(Debian's ``libnghttp2-dev``). ``unavailable()`` says why it cannot be used, and the
P4Runtime server then falls back to ``grpc.server`` (``p4runtime/transports.py``).
This module is part of the optional ``p4target/accel/``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

import grpc

from p4target.p4runtime.grpc_calls import (INTERNAL, UNKNOWN, Abort, Context, Handlers, deserialize, run_unary,
                                           same, status_int)
from p4target.p4runtime.limits import ServerLimits
from p4target.p4runtime.listen import bind

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("h2_loop.pyx")
DECLARATIONS = SOURCE.with_name("h2_decls.pxd")  # cimported by SOURCE
PREFIX = "p4h2"
LIBRARIES = ("nghttp2",)
# After reading a request, the loop polls this long before it blocks (h2_loop._spin_wait):
# a client's next request then finds it awake. 0 turns it off.
SPIN_ENV = "P4TARGET_GRPC_SPIN_US"
DEFAULT_SPIN_US = 250
_UNIMPLEMENTED = status_int(grpc.StatusCode.UNIMPLEMENTED)
_RESOURCE_EXHAUSTED = status_int(grpc.StatusCode.RESOURCE_EXHAUSTED)
_OPTION_LIMITS = (("grpc.max_receive_message_length", "max_receive_bytes"),
                  ("grpc.max_metadata_size", "max_header_list_bytes"),
                  ("grpc.max_concurrent_streams", "max_concurrent_streams"))


def _headers_present(cc: str) -> bool:
    probe = subprocess.run([*cc.split(), "-E", "-x", "c", "-"], input="#include <nghttp2/nghttp2.h>\n",
                           capture_output=True, text=True, check=False)
    return probe.returncode == 0


def loop_module() -> ModuleType:
    """The compiled loop, built first if the cache has none for this source. Raises
    ``native.NativeError`` saying why there is none."""
    from p4target.accel import native

    cc = native.c_compiler()
    text = SOURCE.read_text()
    key = native.build_key("\0".join((PREFIX, *LIBRARIES, text, DECLARATIONS.read_text())), cc)
    name = f"{PREFIX}_{key}"
    path = native.module_path(native.cache_dir(), key, PREFIX)
    if not path.exists():  # ensure_built's file lock makes concurrent builders build it once
        if not _headers_present(cc):
            raise native.NativeError("nghttp2's headers are missing: apt-get install libnghttp2-dev "
                                     "(make deps does)")
        native.ensure_built(text, key, cc, native.cache_dir(), "P4Runtime", module_name=name,
                            prefix=PREFIX, what="HTTP/2 loop", libraries=LIBRARIES,
                            cython_args=("-I", str(DECLARATIONS.parent)))
    return native.load(path, name)


def spin_us_from_env() -> int:
    """``P4TARGET_GRPC_SPIN_US`` (microseconds, 0 or more), or the default with a warning
    naming a value that is not one."""
    text = os.environ.get(SPIN_ENV, "").strip()
    if not text:
        return DEFAULT_SPIN_US
    if not text.isdigit():
        log.warning("%s=%s is not a number of microseconds; using %d", SPIN_ENV, text, DEFAULT_SPIN_US)
        return DEFAULT_SPIN_US
    return int(text)


def unavailable() -> str | None:
    """Why an ``H2Server`` cannot be made here (building the loop if need be), or None."""
    from p4target.accel import native

    try:
        loop_module()
    except native.NativeError as e:
        return str(e)
    return None


class _Call:
    """One call's handler and context; the loop thread calls ``message``, ``half_close``
    and ``closed``, and the answer goes out from the loop or a pool thread."""

    __slots__ = ("server", "stream", "handler", "inline", "context", "method", "request", "requests", "refused",
                 "responses", "queued")

    def __init__(self, server: "H2Server", stream: Any, handler: grpc.RpcMethodHandler, inline: bool,
                 metadata: tuple) -> None:
        self.server = server
        self.stream = stream
        self.handler = handler
        self.inline = inline
        self.context = Context(metadata)
        self.method = stream.method.decode(errors="replace")
        self.request: bytes | None = None
        self.requests: queue.SimpleQueue | None = None  # request-streaming calls: the messages
        self.refused = False
        self.responses: Any = None  # response-streaming calls: the handler's iterator
        self.queued = False  # submitted to the pool, no thread has taken it yet

    def message(self, data: bytes) -> bool:
        """Take one request message; False when it waits for the handler's thread (which
        tells the stream when it takes it: flow control)."""
        if self.requests is not None:
            self.requests.put(data)
            return False
        if self.request is None:
            self.request = data
        elif not self.refused:
            self.refused = True
            self.stream.finish(INTERNAL, b"more than one request message for a unary call")
        return True

    def half_close(self) -> None:
        if self.requests is not None:
            self.requests.put(None)
        elif self.refused:
            return
        elif self.inline:
            self.answer()
        else:
            self.server.submit(self, self.answer)

    def closed(self) -> None:
        self.server.unqueue(self)  # a reset call waiting for a thread no longer counts
        self.context.end(self.method)
        if self.requests is not None:
            self.requests.put(None)

    def answer(self) -> None:
        """A call with one request message: run its handler and answer."""
        request = deserialize(self.handler, self.context, self.request)
        if request is None:
            self.finish()
        elif self.handler.response_streaming:
            self.stream_out(request)
        else:
            self.unary_out(request)

    def run(self) -> None:
        """A request-streaming call, in a pool thread."""
        requests = _Requests(self)
        if self.handler.response_streaming:
            self.stream_out(requests)
        else:
            self.unary_out(requests)

    def unary_out(self, request: Any) -> None:
        response = run_unary(self.handler, request, self.context, self.method)
        if response is not None:
            self.stream.send(response)
        self.finish()

    def stream_out(self, request: Any) -> None:
        """Start a response-streaming handler; its responses go out as ``pump`` sends them."""
        handler = self.handler
        behaviour = handler.unary_stream if not handler.request_streaming else handler.stream_stream
        try:
            self.responses = iter(behaviour(request, self.context))
        except Abort:
            self.finish()
            return
        except Exception as exc:  # a handler's bug fails its call, the server lives on
            log.exception("%s failed", self.method)
            self.context.fail(UNKNOWN, f"Exception iterating responses: {exc}")
            self.finish()
            return
        self.pump()

    def pump(self) -> None:
        """Send the handler's responses until it is done or the client is gone; while
        more than the pending limit waits for the client, the thread goes back to the
        pool and the loop calls ``resume`` once the client has taken enough."""
        stream, serialize = self.stream, self.handler.response_serializer or same
        limit = self.server.pending_limit
        while True:
            if stream.closed:  # reset, cancelled, or its connection gone: stop its work
                self._close_responses()
                return
            if stream.pending > limit:
                stream.when_drained(self.resume)
                return
            try:
                response = next(self.responses)
            except (StopIteration, Abort):
                break
            except Exception as exc:
                log.exception("%s failed", self.method)
                self.context.fail(UNKNOWN, f"Exception iterating responses: {exc}")
                break
            stream.send(serialize(response))
        self._close_responses()
        self.finish()

    def resume(self) -> None:
        """On the loop thread: the client took enough of the answer (or is gone)."""
        try:
            self.server._pool.submit(self.pump)
        except RuntimeError:  # the server is shutting down
            self._close_responses()

    def _close_responses(self) -> None:
        close = getattr(self.responses, "close", None)
        self.responses = None
        if close is not None:
            try:
                close()
            except Exception:
                log.exception("closing the responses of %s failed", self.method)

    def finish(self) -> None:
        ctx = self.context
        self.stream.finish(ctx.code, ctx.details, ctx.trailing)


class _Requests:
    """The request iterator of a client-streaming call."""

    def __init__(self, call: _Call) -> None:
        self._call = call
        self._over = False

    def __iter__(self) -> "_Requests":
        return self

    def __next__(self) -> Any:
        if self._over:
            raise StopIteration
        data = self._call.requests.get()  # type: ignore[union-attr]  # made with this iterator (request streaming)
        if data is not None:
            self._call.stream.taken()
        request = None if data is None else deserialize(self._call.handler, self._call.context, data)
        if request is None:  # the client half-closed or went away, or sent garbage (INTERNAL)
            self._over = True
            raise StopIteration
        return request


class H2Server:
    """The part of ``grpc.Server`` the P4Runtime server uses, with ``inline`` unary methods
    (full names, ``/package.Service/Method``) answered on the loop thread. ``spin_us``:
    how long the loop polls after a request before it blocks (default: from
    ``P4TARGET_GRPC_SPIN_US``, else ``DEFAULT_SPIN_US``). ``limits``: what a client
    may use (``ServerLimits()`` when not given)."""

    def __init__(self, max_workers: int, options: Iterable[tuple[str, Any]] = (), inline: Iterable[str] = (),
                 spin_us: int | None = None, limits: ServerLimits | None = None) -> None:
        opts = dict(options)
        # grpc.Server's own options, when given, win over ``limits`` (as on grpc.server)
        limits = dataclasses.replace(limits or ServerLimits(), **{
            name: int(opts[key]) for key, name in _OPTION_LIMITS if key in opts})
        self.limits = limits
        self.spin_us = spin_us_from_env() if spin_us is None else spin_us
        self.pending_limit = limits.max_pending_answer_bytes
        self._loop = loop_module().Loop(
            self, limits.max_receive_bytes, self.spin_us, max_header_list=limits.max_header_list_bytes,
            max_streams=limits.max_concurrent_streams, max_connections=limits.max_connections,
            pending_limit=limits.max_pending_answer_bytes, stall_s=limits.stall_seconds)
        self._reuse_port = bool(opts.get("grpc.so_reuseport", 1))
        self._queued = 0  # calls submitted to the pool that no thread has taken yet
        self._queue_lock = threading.Lock()
        self._handlers = Handlers(inline)
        self._pool = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt")
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._stopped = threading.Event()

    # ---- grpc.Server's registration interface ---------------------------------------------
    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self._handlers.add(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, grpc.RpcMethodHandler]) -> None:
        """Accepted for the generated code; the generic handlers already name every method."""

    def add_insecure_port(self, address: str) -> int:
        """Listen on ``host:port`` (every address the host resolves to, as gRPC does; port
        0: one free port for all); the port. RuntimeError when nothing could be bound."""
        socks = bind(address, self._reuse_port)
        for sock in socks:
            self.add_socket(sock)
        return int(socks[0].getsockname()[1])

    def add_socket(self, sock: socket.socket) -> None:
        """Accept connections on ``sock`` (bound and listening, of any family: a TLS
        front hands its plaintext over a Unix socket); closed when the server stops."""
        sock.setblocking(False)
        self._sockets.append(sock)
        self._loop.listen(sock.fileno())

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="p4rt-h2", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            self._loop.run()
        except Exception:  # logged; stop() still sees the server gone
            log.exception("the HTTP/2 loop failed")
        finally:
            self._close(wait=True)

    def _close(self, wait: bool = False) -> None:
        """Close the listening sockets and, once the pool's handlers have returned (``wait``:
        their streams are over, so they end), say the server has stopped."""
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()
        self._pool.shutdown(wait=wait, cancel_futures=True)
        self._stopped.set()

    def stop(self, grace: float | None) -> threading.Event:
        """Refuse new calls, let running ones finish for ``grace`` seconds, then cancel
        them; the event is set once every call is over and the server is gone."""
        with self._lock:
            if self._thread is None:  # never started (say its port could not be bound)
                if not self._stopped.is_set():
                    self._close()
                return self._stopped
            if not self._stopping:
                self._stopping = True
                self._loop.stop_listening()
        if not grace or not self._stopped.wait(grace):
            self._loop.cancel_all()
        return self._stopped

    # ---- called by the loop, on its thread ------------------------------------------------
    def on_headers(self, stream: Any) -> None:
        metadata = stream.metadata
        try:
            handler, inline = self._handlers.lookup(stream.method, metadata)
        except Exception:  # a bug in a generic handler fails this call only
            log.exception("looking up the handler of %r failed", stream.method)
            stream.finish(UNKNOWN, b"Error in service handler!")
            return
        if handler is None:
            stream.finish(_UNIMPLEMENTED, b"Method not found!")
            return
        call = stream.call = _Call(self, stream, handler, inline, metadata)
        if handler.request_streaming:
            call.requests = queue.SimpleQueue()
            if not self.submit(call, call.run):
                stream.call = None

    def submit(self, call: _Call, work: Any) -> bool:
        """Run ``work`` in a pool thread unless ``max_queued_calls`` calls wait for one
        already (then the call is refused: RESOURCE_EXHAUSTED, and False). A call
        whose stream is over stops counting at once, and its work is dropped."""
        with self._queue_lock:
            if self._queued >= self.limits.max_queued_calls:
                busy = True
            else:
                busy = False
                self._queued += 1
                call.queued = True
        if busy:
            call.refused = True
            call.stream.finish(_RESOURCE_EXHAUSTED, b"the server has %d calls waiting for a thread already; "
                               b"try again later" % self.limits.max_queued_calls)
            return False
        self._pool.submit(self._start, call, work)
        return True

    def unqueue(self, call: _Call) -> None:
        with self._queue_lock:
            if call.queued:
                call.queued = False
                self._queued -= 1

    def _start(self, call: _Call, work: Any) -> None:
        self.unqueue(call)
        if call.stream.closed:  # reset or cancelled while it waited: its work is not wanted
            return
        work()

    def on_message(self, stream: Any, data: bytes) -> bool:
        return stream.call.message(data) if stream.call is not None else True

    def on_half_close(self, stream: Any) -> None:
        if stream.call is not None:
            stream.call.half_close()

    def on_closed(self, stream: Any) -> None:
        call = stream.call
        if call is not None:
            stream.call = None  # the stream and its call refer to each other: free both now
            call.closed()


def main() -> int:
    """``python -m p4target.accel.h2_server``: build the loop into the native cache."""
    from p4target.accel import native

    t0 = time.monotonic()
    try:
        module = loop_module()
    except native.NativeError as e:
        print(f"the HTTP/2 loop is not built, the P4Runtime server uses grpc.server: {e}", file=sys.stderr)
        return 1
    print(f"HTTP/2 loop: built ({module.__file__}, {time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
