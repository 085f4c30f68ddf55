"""What a gRPC call means to the P4Runtime servicer when it does not run on
``grpc.server``: the handler lookup, the context a handler sees, and how a handler's
result or failure becomes a gRPC status.

The HTTP/2 transport (``p4target/accel/h2_server.py``, on nghttp2) moves the bytes;
what a call means to the handlers the generated ``add_*Servicer_to_server``
functions register is written here, with the errors ``grpc.server`` gives: a handler's bug answers UNKNOWN, an unparsable
request INTERNAL, an unknown method UNIMPLEMENTED.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

import grpc

log = logging.getLogger(__name__)

OK = 0  # grpc_status_code GRPC_STATUS_OK


class Abort(Exception):
    """Raised by ``Context.abort`` to unwind the handler, as grpc's context does."""


def status_int(code: grpc.StatusCode) -> int:
    return code.value[0]


UNKNOWN = status_int(grpc.StatusCode.UNKNOWN)
INTERNAL = status_int(grpc.StatusCode.INTERNAL)


class Context:
    """What a handler sees of its call: the subset of ``grpc.ServicerContext`` in use."""

    __slots__ = ("_metadata", "code", "details", "trailing", "callbacks", "ended")

    def __init__(self, metadata: tuple) -> None:
        self._metadata = metadata
        self.code = OK
        self.details = b""
        self.trailing: tuple | None = None
        self.callbacks: list[Callable[[], None]] | None = None
        self.ended = False

    def invocation_metadata(self) -> tuple:
        return self._metadata

    def set_trailing_metadata(self, metadata: tuple) -> None:
        self.trailing = tuple(metadata)

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        if code is grpc.StatusCode.OK:  # as grpc: aborting with OK still fails the call
            code, details = grpc.StatusCode.UNKNOWN, ""
        self.code, self.details = status_int(code), details.encode()
        raise Abort()

    def abort_with_status(self, status: grpc.Status) -> None:
        self.trailing = tuple(status.trailing_metadata or ())
        self.abort(status.code, status.details)

    def add_callback(self, callback: Callable[[], None]) -> bool:
        """Run ``callback`` when the call ends (answered, cancelled or failed)."""
        if self.ended:
            return False
        if self.callbacks is None:
            self.callbacks = []
        self.callbacks.append(callback)
        return True

    def is_active(self) -> bool:
        return not self.ended

    def fail(self, code: int, details: str) -> None:
        self.code, self.details, self.trailing = code, details.encode(), None

    def end(self, method: str) -> None:
        """The call is over (status sent, or cancelled): run the handler's callbacks."""
        self.ended = True
        for callback in self.callbacks or ():
            try:
                callback()
            except Exception:  # one bad callback does not stop the rest
                log.exception("callback of %s failed", method)


def same(data: Any) -> Any:
    return data


class HandlerCallDetails(grpc.HandlerCallDetails):
    def __init__(self, method: str, invocation_metadata: tuple) -> None:
        self.method = method
        self.invocation_metadata = invocation_metadata


class Handlers:
    """The registered generic handlers, and which unary methods run ``inline``."""

    def __init__(self, inline: Iterable[str]) -> None:
        self._inline = frozenset(inline)
        self._generic: list[grpc.GenericRpcHandler] = []
        self._found: dict[bytes, tuple[grpc.RpcMethodHandler, bool]] = {}

    def add(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        self._generic.extend(handlers)

    def known(self) -> frozenset[bytes]:
        """The methods looked up so far that have a handler."""
        return frozenset(self._found)

    def lookup(self, method: bytes, metadata: tuple) -> tuple[grpc.RpcMethodHandler | None, bool]:
        """The handler of a method and whether it runs inline; looked up once per method
        that has one (unknown names are not kept: a client could send any number)."""
        found = self._found.get(method)
        if found is None:
            name = method.decode(errors="replace")
            details = HandlerCallDetails(name, metadata)
            handler = next((h for g in self._generic if (h := g.service(details)) is not None), None)
            if handler is None:
                return None, False
            inline = name in self._inline and not handler.request_streaming and not handler.response_streaming
            found = self._found[method] = (handler, inline)
        return found


def deserialize(handler: grpc.RpcMethodHandler, context: Context, data: bytes | None) -> Any:
    """The request, or None with the context's status set (no message, or one that does
    not parse: that fails its call only)."""
    if data is None:
        context.fail(INTERNAL, "the call carried no request message")
        return None
    try:
        return (handler.request_deserializer or same)(data)
    except Exception:
        context.fail(INTERNAL, "Exception deserializing request!")
        return None


def run_unary(handler: grpc.RpcMethodHandler, request: Any, context: Context, method: str) -> bytes | None:
    """Run a unary-response handler; the serialised answer, or None with the status set."""
    try:
        response = (handler.unary_unary(request, context) if not handler.request_streaming
                    else handler.stream_unary(request, context))
        return (handler.response_serializer or same)(response)
    except Abort:
        return None
    except Exception as exc:  # a handler's bug fails its call, the server lives on
        log.exception("%s failed", method)
        context.fail(UNKNOWN, f"Exception calling application: {exc}")
        return None


def stream_responses(handler: grpc.RpcMethodHandler, request: Any, context: Context, method: str,
                     send: Callable[[bytes], bool]) -> bool:
    """Run a response-streaming handler, ``send``-ing each serialised response; stops
    when ``send`` says the client is gone (returns False then, True otherwise). A
    failure sets the context's status."""
    behaviour = handler.unary_stream if not handler.request_streaming else handler.stream_stream
    serialize = handler.response_serializer or same
    responses = None
    try:
        responses = behaviour(request, context)
        for response in responses:
            if not send(serialize(response)):
                return False
    except Abort:
        pass
    except Exception as exc:
        log.exception("%s failed", method)
        context.fail(UNKNOWN, f"Exception iterating responses: {exc}")
    finally:
        close = getattr(responses, "close", None)
        if close is not None:
            close()
    return True
