"""The values of ``p4target``'s options: ``PORT@IFACE``, ``PORT=VALUE``, ``[PORT=]N``, a CPU, a define.

Why apart from the command line: each is a small parser with its own rule and
message, tested through the command (tests/target/cli); a ValueError's text is what
the user reads after the option's name.
"""

from __future__ import annotations

import math
from typing import Any

MAX_PORT = 510  # 511 is v1model's drop port


def port_spec(text: str) -> tuple[int, str]:
    """``N@IFACE`` -> (N, IFACE)."""
    num, sep, iface = text.partition("@")
    if not sep or not num or not iface:
        raise ValueError(f"{text!r} is not PORT@IFACE (for example 1@veth0)")
    try:
        port = int(num, 0)
    except ValueError:
        raise ValueError(f"{text!r}: port {num!r} is not a number; give PORT@IFACE") from None
    if not 0 <= port <= MAX_PORT:
        raise ValueError(f"{text!r}: port must be 0..{MAX_PORT} (511 is drop); give PORT@IFACE")
    if len(iface) > 15 or "/" in iface or " " in iface:
        raise ValueError(f"{text!r}: {iface!r} is not a valid interface name; give PORT@IFACE")
    return port, iface


def queue_spec(kind: str, cast: type) -> Any:
    """``PORT=VALUE`` for --queue-rate (packets/s > 0) and --queue-depth (packets >= 0)."""

    def parse(text: str) -> tuple[int, Any]:
        num, sep, value = text.partition("=")
        try:
            port, v = int(num, 0), cast(value)
        except ValueError:
            raise ValueError(f"{text!r} is not PORT={kind.upper()} (for example 2=1000)") from None
        if not sep or not 0 <= port <= MAX_PORT:
            raise ValueError(f"{text!r}: give PORT={kind.upper()} with a port 0..{MAX_PORT}")
        if not (0 < v < math.inf if cast is float else v >= 0):  # nan and inf too
            raise ValueError(f"{text!r}: the {kind} must be "
                             + ("finite and more than 0 packets/s" if cast is float else "0 packets or more"))
        return port, v

    return parse


RX_RING_FRAMES_MIN, RX_RING_FRAMES_MAX = 64, 65536


def ring_frames(text: str) -> tuple[int | None, int]:
    """``--rx-ring-frames``: ``N`` receive ring slots for every port, or ``PORT=N``
    for one port: (the port or None, N)."""
    port_text, sep, count = text.rpartition("=")
    port: int | None = None
    if sep:
        try:
            port = int(port_text, 10)
        except ValueError:
            port = -1
        if port < 0:
            raise ValueError(
                f"{text!r}: give N (slots for every port) or PORT=N (for one port)")
    try:
        n = int(count, 10)
    except ValueError:
        n = -1
    if not RX_RING_FRAMES_MIN <= n <= RX_RING_FRAMES_MAX:
        raise ValueError(
            f"{text!r}: give a whole number of receive ring slots per port from "
            f"{RX_RING_FRAMES_MIN} to {RX_RING_FRAMES_MAX} (default 4096)")
    return port, n


def cpu_spec(text: str) -> int | str:
    """``--cpu``: ``auto``, ``any`` or a CPU number."""
    from p4target.p4runtime.placement import parse_cpu

    return parse_cpu(text)


def define(text: str) -> tuple[str, str]:
    name, _, value = text.partition("=")
    if not name.isidentifier():
        raise ValueError(f"{text!r} is not NAME or NAME=VALUE")
    return name, value or "1"
