"""What one P4Runtime server lets its clients use: the limits every transport applies.

Why: a client that misbehaves (by mistake or on purpose) must cost the server a
bounded amount of memory and CPU, and the other clients nothing they would notice.
The defaults follow grpcio's where grpcio has one; docs/p4runtime.md ("Limits and
hardening") says what a client sees at each. ``p4target run`` sets them with its
``--grpc-max-*`` options; ``P4RuntimeServer(limits=...)`` in Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

MIB = 1024 * 1024


@dataclass(frozen=True)
class ServerLimits:
    """``max_header_list_bytes``: a request's decoded headers (each name + value + 32
    bytes, as HTTP/2 counts them). ``max_receive_bytes``: one request message, after
    decompression. ``max_concurrent_streams``: calls open at once on one connection.
    ``max_connections``: client connections at once (h2 transport). ``max_pending_answer_bytes``:
    answer bytes one call may have waiting for its client's flow-control window
    before its handler pauses; ``stall_seconds``: how long a paused call waits for
    the client to take some before it is reset (CANCEL). ``max_queued_calls``:
    calls waiting for a handler thread (h2 transport); more are refused.
    ``handshake_seconds``: how long a TLS client may take over its handshake, and
    ``max_handshakes``: how many handshakes may be under way at once (the oldest is
    dropped for a new one): the TLS front of the h2 transport (``tls_front``)."""

    max_header_list_bytes: int = 16 * 1024
    max_receive_bytes: int = 4 * MIB
    max_concurrent_streams: int = 100
    max_connections: int = 1000
    max_pending_answer_bytes: int = 256 * 1024
    stall_seconds: float = 30.0
    max_queued_calls: int = 256
    handshake_seconds: float = 10.0
    max_handshakes: int = 64

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not _above_zero(value):
                raise ValueError(f"ServerLimits.{f.name} = {value!r}: give a number greater than 0")
            if f.type == "int" and not isinstance(value, int):
                raise ValueError(f"ServerLimits.{f.name} = {value!r}: give a whole number")
        if self.max_receive_bytes > 2**31 - 1:
            raise ValueError(f"ServerLimits.max_receive_bytes = {self.max_receive_bytes}: at most 2 GiB - 1")

    def grpc_options(self) -> list[tuple[str, Any]]:
        """The same limits as grpcio channel arguments (for grpc.server)."""
        return [("grpc.max_receive_message_length", self.max_receive_bytes),
                ("grpc.max_metadata_size", self.max_header_list_bytes),
                ("grpc.absolute_max_metadata_size", self.max_header_list_bytes),
                ("grpc.max_concurrent_streams", self.max_concurrent_streams)]


# ``p4target run``'s options: (flag, field, metavar, what it bounds)
OPTIONS = (
    ("--grpc-max-header-list", "max_header_list_bytes", "BYTES", "decoded request headers of one call"),
    ("--grpc-max-receive", "max_receive_bytes", "BYTES", "one request message, after decompression"),
    ("--grpc-max-streams", "max_concurrent_streams", "N", "calls open at once on one connection"),
    ("--grpc-max-connections", "max_connections", "N", "client connections at once"),
    ("--grpc-max-pending", "max_pending_answer_bytes", "BYTES",
     "answer bytes of one call waiting for a client that does not read"),
    ("--grpc-stall-seconds", "stall_seconds", "S", "how long such a call waits before it is reset"),
    ("--grpc-max-queued", "max_queued_calls", "N", "calls waiting for a handler thread"),
    ("--grpc-handshake-seconds", "handshake_seconds", "S", "how long a TLS client may take over its handshake"),
    ("--grpc-max-handshakes", "max_handshakes", "N", "TLS handshakes under way at once (the oldest is dropped)"),
)


def _above_zero(value: float) -> bool:
    """More than 0 and finite (not nan, not inf)."""
    return 0 < value < math.inf


def _positive(flag: str, cast: type, text: str) -> Any:
    try:
        value = cast(text)
    except ValueError:
        value = 0
    if not _above_zero(value):
        raise ValueError(f"argument {flag}: {text!r} is not a {'whole ' if cast is int else ''}number above 0")
    return value


def from_options(values: Mapping[str, str | None]) -> ServerLimits:
    """The limits from ``OPTIONS``' values as given on the command line (by field name;
    None: the default); ValueError naming the option when one is not a number above 0
    or out of range."""
    defaults = ServerLimits()
    given = {name: _positive(flag, type(getattr(defaults, name)), text)
             for flag, name, _, _ in OPTIONS if (text := values.get(name)) is not None}
    try:
        return ServerLimits(**given)
    except ValueError as e:
        flag = next((f for f, name, _, _ in OPTIONS if f"ServerLimits.{name} " in str(e)), "--grpc-max-*")
        raise ValueError(f"{flag}: {str(e).split(': ', 1)[-1]}") from None
