"""Client arbitration (P4Runtime spec, "Client Arbitration and Controller Replication").

Each StreamChannel is a ``Client``. For the default role, the primary is the client
whose election id is the highest the device has *ever* received: when the primary's
stream breaks there is no primary until some client arbitrates with an id at least
that high (the old primary reconnecting, or a client with a higher id); a backup with
a lower id does not take over by itself. Notifications follow the spec: OK to the
primary, ALREADY_EXISTS to backups while there is a primary, NOT_FOUND when there is
none; the election id in them is the highest seen (unset before any primary).
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
        self.current: Client | None = None
        self.highest: int | None = None  # election_id_past of the spec

    def primary_election_id(self) -> int | None:
        with self.lock:
            return self.current.election_id if self.current else None

    def is_primary(self, election_id: int) -> bool:
        with self.lock:
            return self.current is not None and self.current.election_id == election_id

    def primary(self) -> Client | None:
        with self.lock:
            return self.current

    def _update_for(self, c: Client) -> p4runtime_pb2.StreamMessageResponse:
        msg = p4runtime_pb2.StreamMessageResponse()
        a = msg.arbitration
        a.device_id = self.device_id
        if self.highest is not None:
            a.election_id.high = self.highest >> 64
            a.election_id.low = self.highest & ((1 << 64) - 1)
        if self.current is c:
            a.status.code = code_pb2.OK
            a.status.message = "you are the primary"
        elif self.current is not None:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "a primary exists; you are a backup"
        else:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "there is no primary; arbitrate with an election id at least the highest seen"
        return msg

    def _to_all(self) -> list[tuple[Client, p4runtime_pb2.StreamMessageResponse]]:
        return [(c, self._update_for(c)) for c in self.clients]

    def arbitrate(self, client: Client, req: p4runtime_pb2.MasterArbitrationUpdate
                  ) -> list[tuple[Client, p4runtime_pb2.StreamMessageResponse]]:
        """Apply ``client``'s MasterArbitrationUpdate; returns the messages to send.

        Raises P4RTError (which ends the stream) for a wrong device, a role other
        than the default, or an election id another live client uses.
        """
        if req.HasField("role") and (req.role.name or req.role.id or req.role.HasField("config")):
            raise P4RTError(code_pb2.UNIMPLEMENTED, "only the default role is supported; leave role unset")
        eid = uint128(req.election_id) if req.HasField("election_id") else None
        with self.lock:
            live = client in self.clients
            if req.device_id != self.device_id:
                if live:
                    raise P4RTError(code_pb2.FAILED_PRECONDITION,
                                    f"this stream is for device {client.device_id}, not {req.device_id}")
                raise P4RTError(code_pb2.NOT_FOUND, f"device id {req.device_id} is not this device ({self.device_id})")
            if eid is not None and any(c is not client and c.election_id == eid for c in self.clients):
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"election id {eid} is already used by another client")
            if not live:
                self.clients.append(client)
            client.election_id = eid
            client.device_id = req.device_id
            if eid is not None and (self.highest is None or eid >= self.highest):
                self.current = client
                self.highest = eid
                return self._to_all()
            if self.current is client:  # the primary downgraded itself
                self.current = None
                return self._to_all()
            return [(client, self._update_for(client))]

    def remove(self, client: Client) -> list[tuple[Client, p4runtime_pb2.StreamMessageResponse]]:
        """``client``'s stream ended; if it was the primary, everyone hears there is none."""
        with self.lock:
            if client not in self.clients:
                return []
            self.clients.remove(client)
            if self.current is client:
                self.current = None
                return self._to_all()
            return []
