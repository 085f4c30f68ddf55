"""EV state changes published to the fabric's event collector (docs/mrcctl.md, "Events").

Why: the controller locates a broken link from the reports of many senders
(``mrcctl events``, ``locate``, ``guard``). Every state change of a sender's EV is
one JSON datagram on the collector's Unix datagram socket (``<run dir>/events.sock``),
which every Mininet host reaches through the file system, without a network.

Publishing never slows a sender: the socket is non-blocking, a datagram the
collector cannot take (its queue full, no collector) is counted and forgotten, and
the next event that gets through carries that count (``dropped``), as an OCP MRC
event queue's overflow count does. The sender publishes only when the environment
names a socket (``MRC_P4_EVENTS``, set by the running network for its hosts), so a
simulated or loopback transfer publishes nothing.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

EVENTS_ENV = "MRC_P4_EVENTS"  # the collector's socket path, for the senders of a running network
SOCKET_NAME = "events.sock"
LOG_NAME = "events.jsonl"
GOOD, ASSUMED_BAD, DENIED, ERROR = "GOOD", "ASSUMED_BAD", "DENIED", "ERROR"
STATES = (GOOD, ASSUMED_BAD, DENIED, ERROR)
# the sender's event (endpoints/ev_set.py) -> (old state, new state)
TRANSITIONS = {"retired": (GOOD, ASSUMED_BAD), "recovered": (ASSUMED_BAD, GOOD), "restored": (ASSUMED_BAD, GOOD)}


def hop_links(hops: Sequence[str]) -> list[str]:
    """The cables of a path given as its switches in order (NIC, leaf, [spine, leaf,]
    NIC), each named as ``mrcctl links`` names it: the end nearer the NICs first
    (``nic1:p0-leaf0``, ``p0-leaf0:p0-spine0``, ``p0-leaf1:p0-spine0``, ``nic3:p0-leaf1``)."""
    top = len(hops) // 2  # the spine (or the one leaf): the path climbs to it, then descends
    return [f"{hops[i]}:{hops[i + 1]}" if i < top else f"{hops[i + 1]}:{hops[i]}" for i in range(len(hops) - 1)]


def host_of_nic(nic: str) -> str:
    """``nic3`` -> ``h3`` (a NIC and its host share the number, fabric/topology.py)."""
    return "h" + nic[3:] if nic.startswith("nic") else nic


def ev_event(t: float, ev: int, plane: int, hops: Sequence[str], old: str, new: str, cause: str,
             transport: str = "mrc") -> dict[str, Any]:
    """One EV state change as the collector stores it (``dropped`` is the publisher's)."""
    return {"t": t, "host": host_of_nic(hops[0]) if hops else "", "peer": host_of_nic(hops[-1]) if hops else "",
            "ev": ev, "plane": plane, "switches": list(hops[1:-1]), "links": hop_links(hops),
            "old": old, "new": new, "cause": cause, "transport": transport}


class Publisher:
    """A non-blocking sender of events to the collector at ``path``."""

    def __init__(self, path: str, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.dropped = 0  # events lost since the last one the collector took
        self.sent = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.setblocking(False)

    def publish(self, event: Mapping[str, Any]) -> bool:
        """Send one event (with the count of those lost before it); False: lost, counted."""
        data = json.dumps({**event, "dropped": self.dropped}, separators=(",", ":")).encode()
        try:
            self._sock.sendto(data, self.path)
        except OSError:  # queue full (EAGAIN), no collector (ENOENT, ECONNREFUSED), too large
            self.dropped += 1
            return False
        self.dropped = 0
        self.sent += 1
        return True

    def close(self) -> None:
        self._sock.close()


def sender_hook(path_names: Mapping[int, str] | None,
                environ: Mapping[str, str] = os.environ) -> Callable[[dict[str, Any]], None] | None:
    """What the sender's EV set calls with each of its events (endpoints/ev_set.py):
    publishes it to the collector ``environ`` names; None when it names none or the
    EVs have no paths (a plain ``--ev-list``)."""
    path = environ.get(EVENTS_ENV)
    if not path or not path_names:
        return None
    pub = Publisher(path)
    hops = {ev: [h.strip() for h in text.split(">")] for ev, text in path_names.items()}

    def on_event(e: dict[str, Any]) -> None:
        old, new = TRANSITIONS.get(e["event"], (GOOD, ASSUMED_BAD))
        pub.publish(ev_event(pub.clock(), e["ev"], e["plane"], hops.get(e["ev"], []), old, new,
                             e["cause"]))

    return on_event


def _plane_of(hops: Sequence[str]) -> int:
    """The plane of a path from its fabric switches' names (``p1-leaf0``: plane 1); -1 if none says."""
    for hop in hops:
        head, _, rest = hop.partition("-")
        if rest and head[:1] == "p" and head[1:].isdigit():
            return int(head[1:])
    return -1


def qp_error(path_text: str | None, ev: int, why: str, environ: Mapping[str, str] = os.environ) -> bool:
    """A RoCE baseline QP gone to the error state, published as its one EV's event
    (GOOD -> ERROR, transport ``roce``, the QP's reason as the cause); False when the
    environment names no collector, the EV has no path, or the datagram was lost."""
    sock = environ.get(EVENTS_ENV)
    if not sock or not path_text:
        return False
    hops = [h.strip() for h in path_text.split(">")]
    pub = Publisher(sock)
    try:
        return pub.publish(ev_event(pub.clock(), ev, _plane_of(hops), hops, GOOD, ERROR, why, transport="roce"))
    finally:
        pub.close()


__all__ = ["ASSUMED_BAD", "DENIED", "ERROR", "EVENTS_ENV", "GOOD", "LOG_NAME", "Publisher", "SOCKET_NAME", "STATES",
           "ev_event", "hop_links", "host_of_nic", "qp_error", "sender_hook"]
