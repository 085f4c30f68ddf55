"""Which gRPC server the P4Runtime servicer runs on.

``P4TARGET_GRPC_TRANSPORT`` names one of ``TRANSPORTS``: ``h2`` (``h2_server``, on
nghttp2; the default), ``core`` (``core_server``, on grpcio's core) or ``grpc`` (the
standard ``grpc.server``). When the one named cannot run here (no nghttp2 loop; a
grpcio without the core binding ``core_server`` is written on), the next one down is
used and one warning says why: a switch always comes up, at worst slower.
"""

from __future__ import annotations

import logging
import os
from concurrent import futures
from typing import Any, Iterable

import grpc

from p4target.p4runtime import core_server, h2_server
from p4target.p4runtime.limits import ServerLimits

log = logging.getLogger(__name__)

TRANSPORT_ENV = "P4TARGET_GRPC_TRANSPORT"
TRANSPORTS = ("h2", "core", "grpc")
# Answered on the transport's loop thread as soon as they arrive: short calls only.
INLINE_METHODS = ("/p4.v1.P4Runtime/Write", "/p4.v1.P4Runtime/Capabilities")
_UNAVAILABLE = {"h2": h2_server.unavailable, "core": core_server.unavailable}


def make_transport(max_workers: int, options: Iterable[tuple[str, Any]], device_id: int,
                   limits: ServerLimits | None = None) -> tuple[Any, str]:
    """The gRPC server the environment asks for, or the next that can run here; with its
    name as ``P4RuntimeServer.transport`` gives it (``h2``, ``core``, ``grpc.server``).
    ``limits`` go to h2_server as they are and to the others as grpc options (which
    have no connection, queue or stall limit)."""
    limits = limits or ServerLimits()
    options = list(options) + limits.grpc_options()
    choice = os.environ.get(TRANSPORT_ENV, "h2").strip().lower() or "h2"
    if choice not in TRANSPORTS:
        log.warning("device %d: %s=%s is not one of %s; using h2", device_id, TRANSPORT_ENV, choice,
                    ", ".join(TRANSPORTS))
        choice = "h2"
    for name in TRANSPORTS[TRANSPORTS.index(choice):]:
        why = _UNAVAILABLE[name]() if name in _UNAVAILABLE else None
        if why is None:
            break
        log.warning("device %d: the P4Runtime server cannot use its %s transport (single-entry writes "
                    "slower): %s", device_id, name, why)
    if name == "h2":
        return h2_server.H2Server(max_workers, options=options, inline=INLINE_METHODS, limits=limits), name
    if name == "core":
        return core_server.CoreServer(max_workers, options=options, inline=INLINE_METHODS), name
    pool = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt")
    return grpc.server(pool, options=options), "grpc.server"
