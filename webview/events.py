"""The EV events of ``<run dir>/events.jsonl``, tailed: the EVs' states by transfer.

Why tail a file: the EV state changes (GOOD, ASSUMED_BAD, DENIED, ERROR) are written
by whoever sees them (the senders' collector, the controller's deny/undeny), one JSON
object a line; the web view follows the file as it grows and keeps the latest state
of each EV. A missing file is no error (nothing has been reported yet); a line that
is not an event is counted and skipped; a file that shrank (written anew) is read
again from its start.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STATES = ("GOOD", "ASSUMED_BAD", "DENIED", "ERROR")
GUARD_KEPT = 20  # the controller's latest deny/undeny actions shown
CHUNK = 1 << 20  # bytes read at most per poll: a huge backlog is caught up over several polls


@dataclass
class EvState:
    """The latest state of one EV of one transfer."""

    ev: int
    plane: int
    state: str
    cause: str
    links: list[str]
    t: float


@dataclass
class Transfer:
    """The EVs of one (host, peer, transport), by EV."""

    host: str
    peer: str
    transport: str
    evs: dict[int, EvState] = field(default_factory=dict)
    last: float = 0.0

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATES, 0)
        for e in self.evs.values():
            out[e.state] += 1
        return out


def _event(obj: Any) -> tuple[tuple[str, str, str], EvState] | None:
    """(transfer key, EV state) of a parsed line, None when it is not an EV event."""
    if not isinstance(obj, dict):
        return None
    try:
        key = (str(obj["host"]), str(obj["peer"]), str(obj.get("transport", "mrc")))
        state = str(obj["new"])
        ev = EvState(int(obj["ev"]), int(obj["plane"]), state, str(obj.get("cause", "")),
                     [str(k) for k in obj.get("links", [])], float(obj["t"]))
    except (KeyError, TypeError, ValueError):
        return None
    return (key, ev) if state in STATES else None


class EventLog:
    """Follows one events file: call ``poll`` to read what was appended since."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.lines = 0
        self.malformed = 0
        self.transfers: dict[tuple[str, str, str], Transfer] = {}
        self.guard: deque[dict[str, Any]] = deque(maxlen=GUARD_KEPT)
        self._partial = b""

    def poll(self) -> int:
        """Read the complete lines appended since the last poll; how many were read."""
        try:
            size = self.path.stat().st_size
            if size < self.offset:  # the file was written anew
                self.offset, self._partial = 0, b""
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read(CHUNK)
        except OSError:
            return 0
        self.offset += len(data)
        *complete, self._partial = (self._partial + data).split(b"\n")
        for raw in complete:
            if raw.strip():
                self._line(raw)
        return len(complete)

    def _line(self, raw: bytes) -> None:
        self.lines += 1
        try:
            obj = json.loads(raw)
        except ValueError:
            self.malformed += 1
            return
        if isinstance(obj, dict) and obj.get("kind") == "guard":
            self.guard.append(obj)
            return
        parsed = _event(obj)
        if parsed is None:
            self.malformed += 1
            return
        key, ev = parsed
        tr = self.transfers.get(key)
        if tr is None:
            tr = self.transfers[key] = Transfer(*key)
        tr.evs[ev.ev] = ev
        tr.last = max(tr.last, ev.t)

    def to_json(self) -> dict[str, Any]:
        """The transfers (their EVs' state counts and the EVs not GOOD), the latest
        guard actions, and what was read."""
        transfers = []
        for tr in sorted(self.transfers.values(), key=lambda x: -x.last):
            transfers.append({
                "host": tr.host, "peer": tr.peer, "transport": tr.transport, "last": tr.last,
                "counts": tr.counts(),
                "not_good": [{"ev": e.ev, "plane": e.plane, "state": e.state, "cause": e.cause, "links": e.links}
                             for e in sorted(tr.evs.values(), key=lambda e: e.ev) if e.state != "GOOD"],
            })
        return {"path": str(self.path), "exists": self.path.exists(), "lines": self.lines,
                "malformed": self.malformed, "transfers": transfers, "guard": list(self.guard)}
