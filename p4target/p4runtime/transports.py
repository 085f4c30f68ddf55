"""Which gRPC server the P4Runtime servicer runs on.

``P4TARGET_GRPC_TRANSPORT`` names one of ``TRANSPORTS``: ``h2`` (``H2Server`` of
``p4target/accel/h2_server.py``, on nghttp2; the default) or ``grpc`` (the standard
``grpc.server``, the reference). When ``h2`` cannot run here (``p4target/accel/``
absent, no nghttp2 loop built or buildable, ``P4TARGET_NATIVE=0``), ``grpc.server`` is
used and one warning says why: a switch always comes up, at worst slower. A server
with TLS (``tls.py``) runs on the same choice: ``h2`` behind the TLS front of
``tls_front.py`` (which ends TLS and hands the HTTP/2 on over a private Unix socket),
or ``grpc.server`` with grpcio's own TLS.
"""

from __future__ import annotations

import logging
import os
from concurrent import futures
from typing import Any, Iterable

import grpc

from p4target import optional_accel
from p4target.p4runtime.limits import ServerLimits
from p4target.p4runtime.tls_front import TLSFront

log = logging.getLogger(__name__)

TRANSPORT_ENV = "P4TARGET_GRPC_TRANSPORT"
TRANSPORTS = ("h2", "grpc")
# Answered on the transport's loop thread as soon as they arrive: short calls only.
INLINE_METHODS = ("/p4.v1.P4Runtime/Write", "/p4.v1.P4Runtime/Capabilities")


def _h2_unavailable() -> str | None:
    """Why the HTTP/2 transport cannot run here, or None."""
    h2_server = optional_accel.part("h2_server")
    if h2_server is None:
        return "p4target/accel/ is not installed"
    return h2_server.unavailable()


def make_transport(max_workers: int, options: Iterable[tuple[str, Any]], device_id: int,
                   limits: ServerLimits | None = None, secure: bool = False) -> tuple[Any, str]:
    """The gRPC server the environment asks for, or ``grpc.server`` when that one cannot
    run here; with its name as ``P4RuntimeServer.transport`` gives it (``h2``,
    ``grpc.server``). ``limits`` go to the HTTP/2 server as they are and to
    ``grpc.server`` as grpc options (it has no connection, queue or stall limit).
    ``secure``: the server will listen with TLS (``h2`` then comes behind a
    ``tls_front.TLSFront``)."""
    limits = limits or ServerLimits()
    options = list(options) + limits.grpc_options()
    choice = os.environ.get(TRANSPORT_ENV, "h2").strip().lower() or "h2"
    if choice not in TRANSPORTS:
        log.warning("device %d: %s=%s is not one of %s; using h2", device_id, TRANSPORT_ENV, choice,
                    ", ".join(TRANSPORTS))
        choice = "h2"
    if choice == "h2":
        why = _h2_unavailable()
        if why is None:
            h2_server = optional_accel.part("h2_server")
            assert h2_server is not None  # _h2_unavailable said it is there
            server = h2_server.H2Server(max_workers, options=options, inline=INLINE_METHODS, limits=limits)
            if secure:
                return TLSFront(server, limits, reuse_port=bool(dict(options).get("grpc.so_reuseport", 1))), "h2"
            return server, "h2"
        log.warning("device %d: the P4Runtime server cannot use its h2 transport and runs on grpc.server "
                    "(single-entry writes slower): %s", device_id, why)
    return _grpc_server(max_workers, options), "grpc.server"


def _grpc_server(max_workers: int, options: list[tuple[str, Any]]) -> grpc.Server:
    pool = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt")
    return grpc.server(pool, options=options)
