"""Client arbitration (P4Runtime spec section 5): who is primary, who is told what.

Each StreamChannel is a ``Client``. For the default role, the connected client with
the highest election id is the primary; others are backups. Every arbitration
request is answered to its sender, and when the primary changes (a higher id
arrives, the primary leaves) every client is told: OK to the primary, ALREADY_EXISTS
to backups when there is a primary, NOT_FOUND when there is none.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime.errors import P4RTError

_ids = itertools.count(1)


def uint128(msg: p4runtime_pb2.Uint128) -> int:
    return (msg.high << 64) | msg.low


@dataclass(eq=False)
class Client:
    """One open StreamChannel; ``outbox`` is what the server sends it."""

    outbox: Any
    election_id: int | None = None
    device_id: int = 0
    ident: int = field(default_factory=lambda: next(_ids))


class Arbiter:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.lock = threading.Lock()
        self.clients: list[Client] = []

    def _primary(self) -> Client | None:
        live = [c for c in self.clients if c.election_id is not None]
        return max(live, key=lambda c: c.election_id) if live else None

    def primary_election_id(self) -> int | None:
        with self.lock:
            p = self._primary()
            return p.election_id if p else None

    def is_primary(self, election_id: int) -> bool:
        with self.lock:
            p = self._primary()
            return p is not None and p.election_id == election_id

    def primary(self) -> Client | None:
        with self.lock:
            return self._primary()

    def _update_for(self, c: Client, primary: Client | None) -> p4runtime_pb2.StreamMessageResponse:
        msg = p4runtime_pb2.StreamMessageResponse()
        a = msg.arbitration
        a.device_id = self.device_id
        eid = primary.election_id if primary else (c.election_id or 0)
        a.election_id.high = eid >> 64
        a.election_id.low = eid & ((1 << 64) - 1)
        if primary is c:
            a.status.code = code_pb2.OK
            a.status.message = "you are the primary"
        elif primary is not None:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "a primary exists; you are a backup"
        else:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "there is no primary"
        return msg

    def arbitrate(self, client: Client, req: p4runtime_pb2.MasterArbitrationUpdate
                  ) -> list[tuple[Client, p4runtime_pb2.StreamMessageResponse]]:
        """Register ``client``'s arbitration; returns the messages to send."""
        if req.device_id != self.device_id:
            raise P4RTError(code_pb2.NOT_FOUND, f"device id {req.device_id} is not this device ({self.device_id})")
        if req.HasField("role") and (req.role.name or req.role.id):
            raise P4RTError(code_pb2.UNIMPLEMENTED, "only the default role is supported; leave role unset")
        eid = uint128(req.election_id) if req.HasField("election_id") else None
        with self.lock:
            if eid is not None and any(c is not client and c.election_id == eid for c in self.clients):
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"election id {eid} is already used by another client")
            before = self._primary()
            if client not in self.clients:
                self.clients.append(client)
            client.election_id = eid
            client.device_id = req.device_id
            after = self._primary()
            if before is not after:
                return [(c, self._update_for(c, after)) for c in self.clients]
            return [(client, self._update_for(client, after))]

    def remove(self, client: Client) -> list[tuple[Client, p4runtime_pb2.StreamMessageResponse]]:
        with self.lock:
            if client not in self.clients:
                return []
            before = self._primary()
            self.clients.remove(client)
            after = self._primary()
            if before is not after:
                return [(c, self._update_for(c, after)) for c in self.clients]
            return []
