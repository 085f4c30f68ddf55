"""Digest lists for the controller: sizing, acknowledgement and duplicate suppression.

Per DigestEntry config (spec "DigestEntry"): a list holds at most ``max_list_size``
digest messages (0: no limit); with ``ack_timeout_ns`` > 0, a message already sent in a
list that is neither acknowledged nor timed out is not sent again (so a flood of the
same learned MAC costs one notification). Lists go out as soon as the pipeline emits
them: ``max_timeout_ns`` only bounds how long a server may wait, and this one never
waits. Pure bookkeeping; the server sends what ``lists`` returns.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime import bytestrings


@dataclass
class _Outstanding:
    digest_id: int
    values: frozenset[tuple[int, ...]]
    deadline: float


@dataclass
class DigestLists:
    next_list_id: int = 0
    outstanding: dict[int, _Outstanding] = field(default_factory=dict)  # list id -> what it carried
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lists(self, digest_id: int, config: p4runtime_pb2.DigestEntry.Config, rows: list[tuple[int, ...]],
              now: float | None = None, as_tuple: bool = False) -> list[p4runtime_pb2.DigestList]:
        """The DigestList messages to send for ``rows`` the pipeline just emitted (each
        row a P4 struct, or a tuple with ``as_tuple``: the digest's P4Info type)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            self._expire(now)
            pending: set[tuple[int, ...]] = set()
            if config.ack_timeout_ns > 0:
                for o in self.outstanding.values():
                    if o.digest_id == digest_id:
                        pending |= o.values
            fresh: list[tuple[int, ...]] = []
            for row in rows:
                if row in pending:
                    continue
                if config.ack_timeout_ns > 0:
                    pending.add(row)
                fresh.append(row)
            size = config.max_list_size if config.max_list_size > 0 else max(1, len(fresh))
            out = []
            for i in range(0, len(fresh), size):
                chunk = fresh[i:i + size]
                self.next_list_id += 1
                msg = p4runtime_pb2.DigestList(digest_id=digest_id, list_id=self.next_list_id,
                                               timestamp=time.time_ns())
                for row in chunk:
                    data = msg.data.add()
                    members = data.tuple.members if as_tuple else data.struct.members
                    for v in row:
                        members.add().bitstring = bytestrings.encode(v)
                if config.ack_timeout_ns > 0:
                    self.outstanding[self.next_list_id] = _Outstanding(
                        digest_id, frozenset(chunk), now + config.ack_timeout_ns / 1e9)
                out.append(msg)
            return out

    def ack(self, digest_id: int, list_id: int) -> None:
        """A DigestListAck: its messages may be sent again. Unknown lists are ignored
        (they were never held back, or their ack timeout already released them)."""
        with self.lock:
            o = self.outstanding.get(list_id)
            if o is not None and o.digest_id == digest_id:
                del self.outstanding[list_id]

    def _expire(self, now: float) -> None:
        for lid in [lid for lid, o in self.outstanding.items() if o.deadline <= now]:
            del self.outstanding[lid]
