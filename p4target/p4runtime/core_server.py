"""A gRPC server on grpcio's core layer that answers short unary calls on its poller thread.

Why not ``grpc.server``: its poller thread (Python) hands every call to a worker of a
thread pool, and the worker and the poller then pass the call's four completion
events back and forth under a condition. For a one-entry Write that costs about
150 us of CPU and 14-17 thread wake-ups per call, five times the P4Runtime work
itself (docs/p4runtime.md, "Single-entry writes, step by step"). Here one thread polls
the completion queue and runs a short unary handler (``inline`` methods: Write,
Capabilities) the moment its request arrives, then sends the answer and the status in
one batch: three completion events, no hand-off.

Every other call (streams, server-streaming Reads, SetForwardingPipelineConfig, which
compiles) runs in a pool thread as with ``grpc.server``; that thread starts its batches
and waits for the poller to hand back each one's completion. The poller never waits
for a pool thread, so the one rule that keeps this free of deadlocks is: **no thread
may wait for a call's completion while holding a lock an inline handler takes** (the
P4Runtime server's threads only put stream messages on queues under its locks).
An inline handler does hold up the other calls while it runs, so only handlers that
finish in milliseconds belong inline; one that waits on a lock a pipeline compile
holds delays stream traffic until the compile is done.

The server takes the ``grpc.GenericRpcHandler`` objects the generated
``add_*Servicer_to_server`` functions register, and hands handlers a context with
the part of ``grpc.ServicerContext`` they use (abort, trailing metadata, callbacks
when the call ends). It uses ``grpc._cython.cygrpc``, grpcio's own core binding (the
layer ``grpc.server`` and ``grpc.aio`` are written on): not a public API, so the
P4Runtime tests exercise every path of it against real gRPC clients.
"""

from __future__ import annotations

import logging
import threading
from concurrent import futures
from typing import Any, Callable, Iterable

import grpc

from p4target.p4runtime.grpc_calls import (Context, Handlers, deserialize, run_unary, status_int,
                                           stream_responses)

try:
    from grpc._cython import cygrpc
except ImportError as e:  # a grpcio without the core binding this module is written on
    cygrpc = None
    _IMPORT_ERROR: str | None = f"grpc._cython.cygrpc cannot be imported ({e})"
else:
    _IMPORT_ERROR = None

log = logging.getLogger(__name__)

_NEW_CALL = "new call"
_SHUTDOWN = "shutdown"
_NO_FLAGS = 0

# What this module uses of cygrpc, checked before a server is made (``unavailable``).
_USED = {
    "Server": ("register_completion_queue", "add_http2_port", "start", "request_call", "shutdown",
               "cancel_all_calls", "destroy"),
    "CompletionQueue": ("poll", "shutdown"),
    "Call": ("start_server_batch",),
    "CompletionType": ("queue_shutdown", "operation_complete"),
    "CallError": ("ok",),
    "ReceiveMessageOperation": (), "ReceiveCloseOnServerOperation": (), "SendInitialMetadataOperation": (),
    "SendMessageOperation": (), "SendStatusFromServerOperation": (),
}


def unavailable() -> str | None:
    """Why this grpcio cannot carry a ``CoreServer`` (its core binding is not the one
    this module was written against), or None when it can."""
    if cygrpc is None:
        return _IMPORT_ERROR
    for name, members in _USED.items():
        obj = getattr(cygrpc, name, None)
        missing = [m for m in members if obj is not None and not hasattr(obj, m)]
        if obj is None or missing:
            what = f"cygrpc.{name}" + (f".{missing[0]}" if missing else "")
            return f"grpcio {grpc.__version__} has no {what}"
    return None


class _Waiter:
    """The tag of a batch a pool thread waits for: the poller hands it the event."""

    __slots__ = ("done", "event")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.event: Any = None

    def __call__(self, event: Any) -> None:
        self.event = event
        self.done.set()


class _Call:
    """One call: its core handle, its handler and its context, on whichever thread runs it."""

    __slots__ = ("call", "handler", "context", "method", "server", "_sent_initial")

    def __init__(self, server: "CoreServer", event: Any, handler: grpc.RpcMethodHandler, method: str) -> None:
        self.server = server
        self.call = event.call
        self.handler = handler
        self.method = method
        self.context = Context(event.invocation_metadata)

    # ---- batches ------------------------------------------------------------------------
    def _start(self, ops: tuple, tag: Callable[[Any], None]) -> bool:
        return self.call.start_server_batch(ops, tag) == cygrpc.CallError.ok

    def _wait(self, ops: tuple) -> Any:
        """Start a batch and wait for its completion (pool threads only); None if refused."""
        waiter = _Waiter()
        if not self._start(ops, waiter):
            return None
        waiter.done.wait()
        return waiter.event

    def _receive(self) -> bytes | None:
        event = self._wait((cygrpc.ReceiveMessageOperation(_NO_FLAGS),))
        if event is None or not event.success:
            return None
        return event.batch_operations[0].message()

    def _final_ops(self, response: bytes | None, with_initial: bool) -> tuple:
        ctx = self.context
        ops = [cygrpc.SendStatusFromServerOperation(ctx.trailing, ctx.code, ctx.details, _NO_FLAGS)]
        if with_initial:
            ops.append(cygrpc.SendInitialMetadataOperation(None, _NO_FLAGS))
        if response is not None:
            ops.append(cygrpc.SendMessageOperation(response, _NO_FLAGS))
        return tuple(ops)

    def _ended(self, event: Any) -> None:
        """The call is over (status sent, or cancelled): run the handler's callbacks."""
        self.context.end(self.method)

    def _deserialize(self, data: bytes | None) -> Any:
        return deserialize(self.handler, self.context, data)

    def _unary(self, request: Any) -> bytes | None:
        return run_unary(self.handler, request, self.context, self.method)

    def on_request(self, event: Any) -> None:
        """Inline unary call, on the poller: the request is here; answer it in one batch."""
        request = self._deserialize(event.batch_operations[0].message() if event.success else None)
        response = None if request is None else self._unary(request)
        ops = self._final_ops(response, True) + (cygrpc.ReceiveCloseOnServerOperation(_NO_FLAGS),)
        started = self._start(ops, self._ended)
        self.server._call_done()
        if not started:
            self._ended(None)

    def run(self) -> None:
        """A pool thread's call: the handler, then no more batches from this thread."""
        try:
            self._run()
        finally:
            self.server._call_done()

    def _run(self) -> None:
        """Unary or streaming, each batch waited for in turn."""
        h = self.handler
        if not self._start((cygrpc.ReceiveCloseOnServerOperation(_NO_FLAGS),), self._ended):
            return
        if h.request_streaming:
            request: Any = _Requests(self)
        else:
            request = self._deserialize(self._receive())
            if request is None:
                self._start(self._final_ops(None, True), _ignore)
                return
        if not h.response_streaming:
            response = self._unary(request)
            self._start(self._final_ops(response, True), _ignore)
            return
        self._sent_initial = False
        if stream_responses(h, request, self.context, self.method, self._send):
            self._start(self._final_ops(None, not self._sent_initial), _ignore)

    def _send(self, data: bytes) -> bool:
        """One response of a stream, waited for; False once the client is gone."""
        ops = (cygrpc.SendMessageOperation(data, _NO_FLAGS),)
        if not self._sent_initial:
            ops = (cygrpc.SendInitialMetadataOperation(None, _NO_FLAGS),) + ops
            self._sent_initial = True
        event = self._wait(ops)
        return event is not None and event.success


class _Requests:
    """The request iterator of a client-streaming call: each ``next`` receives one message."""

    def __init__(self, call: _Call) -> None:
        self._call = call

    def __iter__(self) -> "_Requests":
        return self

    def __next__(self) -> Any:
        data = self._call._receive()
        if data is None:  # the client half-closed, cancelled or went away
            raise StopIteration
        request = self._call._deserialize(data)
        if request is None:  # garbage ends the stream with INTERNAL, as grpc.server does
            raise StopIteration
        return request


def _ignore(event: Any) -> None:
    """Tag of a final batch nobody waits for."""


class CoreServer:
    """The part of ``grpc.Server`` the P4Runtime server uses, with ``inline`` unary methods
    (full names, ``/package.Service/Method``) answered on the poller thread."""

    def __init__(self, max_workers: int, options: Iterable[tuple[str, Any]] = (), inline: Iterable[str] = ()) -> None:
        self._cq = cygrpc.CompletionQueue()
        self._server = cygrpc.Server(tuple(options), False)
        self._server.register_completion_queue(self._cq)
        self._pool = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt")
        self._handlers = Handlers(inline)
        self._lock = threading.Lock()
        self._serving = False
        # Calls that may still start batches; the queue is shut down only when none is left
        # and the core has finished its shutdown (a batch on a shut-down queue aborts).
        self._active = 0
        self._shut_down = False
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- grpc.Server's registration interface ---------------------------------------------
    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self._handlers.add(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, grpc.RpcMethodHandler]) -> None:
        """Accepted for the generated code; the generic handlers already name every method."""

    def add_insecure_port(self, address: str) -> int:
        port = self._server.add_http2_port(address.encode())
        if port == 0:
            raise RuntimeError(f"cannot bind {address}")
        return port

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        self._server.start()
        with self._lock:
            self._serving = True
            self._server.request_call(self._cq, self._cq, _NEW_CALL)
        self._thread = threading.Thread(target=self._poll, name="p4rt-poller", daemon=True)
        self._thread.start()

    def stop(self, grace: float | None) -> threading.Event:
        """Refuse new calls, let running ones finish for ``grace`` seconds, then cancel
        them; the event is set once every call is over and the server is gone."""
        with self._lock:
            if self._thread is None:  # never started (say its port could not be bound)
                if not self._stopped.is_set():
                    self._server.destroy()
                    self._pool.shutdown(wait=False)
                    self._stopped.set()
                return self._stopped
            if self._serving:
                self._serving = False
                self._server.shutdown(self._cq, _SHUTDOWN)
        if not grace or not self._stopped.wait(grace):
            with self._lock:
                if not self._stopped.is_set():
                    self._server.cancel_all_calls()
        return self._stopped

    # ---- the poller ----------------------------------------------------------------------
    def _poll(self) -> None:
        while True:
            event = self._cq.poll()
            kind = event.completion_type
            if kind == cygrpc.CompletionType.queue_shutdown:
                break
            if kind != cygrpc.CompletionType.operation_complete:
                continue
            tag = event.tag
            try:
                if tag is _NEW_CALL:
                    self._new_call(event)
                elif tag is _SHUTDOWN:
                    with self._lock:
                        self._shut_down = True
                        self._close_queue_if_idle()
                else:
                    tag(event)
            except Exception:  # noqa: BLE001 - the poller must outlive any one call's failure
                log.exception("gRPC event %r failed", tag)
            event = None  # drop the call's last reference before blocking again
        with self._lock:
            self._server.destroy()
            self._pool.shutdown(wait=False)
            self._stopped.set()

    def _close_queue_if_idle(self) -> None:
        """Under the lock: shut the queue once the core is done and no call is running;
        the poller then drains what is left and stops."""
        if self._shut_down and self._active == 0:
            self._cq.shutdown()

    def _call_done(self) -> None:
        """A call will start no more batches (its last one may still be pending)."""
        with self._lock:
            self._active -= 1
            self._close_queue_if_idle()

    def _new_call(self, event: Any) -> None:
        with self._lock:
            if self._serving:
                self._server.request_call(self._cq, self._cq, _NEW_CALL)
            if not event.success:  # shutting down
                return
            self._active += 1
        try:
            handler, inline = self._handlers.lookup(event.call_details.method, event.invocation_metadata)
        except Exception:  # noqa: BLE001 - a bug in a generic handler fails this call only
            log.exception("looking up the handler of %r failed", event.call_details.method)
            self._reject(event, grpc.StatusCode.UNKNOWN, b"Error in service handler!")
            self._call_done()
            return
        if handler is None:
            self._reject(event, grpc.StatusCode.UNIMPLEMENTED, b"Method not found!")
            self._call_done()
            return
        call = _Call(self, event, handler, event.call_details.method.decode(errors="replace"))
        if not inline:
            self._pool.submit(call.run)
        elif not call._start((cygrpc.ReceiveMessageOperation(_NO_FLAGS),), call.on_request):
            log.debug("%s: the call ended before its request", call.method)
            self._call_done()

    def _reject(self, event: Any, code: grpc.StatusCode, details: bytes) -> None:
        ops = (cygrpc.SendInitialMetadataOperation(None, _NO_FLAGS),
               cygrpc.SendStatusFromServerOperation(None, status_int(code), details, _NO_FLAGS),
               cygrpc.ReceiveCloseOnServerOperation(_NO_FLAGS))
        call = event.call
        call.start_server_batch(ops, lambda _event: call)  # the tag keeps the call alive
