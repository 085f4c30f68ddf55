"""A small synchronous P4Runtime client on raw grpc stubs, for the server tests.

It speaks the wire protocol directly (finsy's generated stubs, no client library
logic), so what the tests check is the server's behaviour, names resolved through
the P4Info the server returns.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass
from typing import Any

import grpc
from finsy.proto.google.rpc import status_pb2
from finsy.proto.p4.config.v1 import p4info_pb2
from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


def enc(value: int, width: int | None = None) -> bytes:
    """Canonical bytestring, or padded to ``width`` bits when given."""
    if width is not None:
        return value.to_bytes((width + 7) // 8, "big")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


@dataclass
class Names:
    """Name -> id lookups over a P4Info."""

    info: p4info_pb2.P4Info

    def table(self, name: str) -> p4info_pb2.Table:
        return next(t for t in self.info.tables if t.preamble.name.endswith(name))

    def table_id(self, name: str) -> int:
        return self.table(name).preamble.id

    def field_id(self, table: str, field: str) -> int:
        return next(f.id for f in self.table(table).match_fields if f.name == field)

    def action(self, name: str) -> p4info_pb2.Action:
        return next(a for a in self.info.actions if a.preamble.name == name or a.preamble.name.endswith("." + name))

    def action_id(self, name: str) -> int:
        return self.action(name).preamble.id

    def param_id(self, action: str, param: str) -> int:
        return next(p.id for p in self.action(action).params if p.name == param)

    def id_of(self, collection: str, name: str) -> int:
        return next(o.preamble.id for o in getattr(self.info, collection) if o.preamble.name.endswith(name))

    def metadata_id(self, header: str, field: str) -> int:
        h = next(c for c in self.info.controller_packet_metadata if c.preamble.name == header)
        return next(m.id for m in h.metadata if m.name == field)

    # ---- builders ------------------------------------------------------------------
    def act(self, name: str, **params: int) -> p4runtime_pb2.Action:
        a = p4runtime_pb2.Action(action_id=self.action_id(name))
        for p, v in params.items():
            a.params.add(param_id=self.param_id(name, p), value=enc(v))
        return a

    def entry(self, table: str, match: dict[str, Any] | None = None, action: str | None = None,
              priority: int = 0, **params: int) -> p4runtime_pb2.TableEntry:
        """``match`` values: int (exact), ("lpm", v, plen), ("ternary", v, m), ("range", lo, hi), ("optional", v)."""
        e = p4runtime_pb2.TableEntry(table_id=self.table_id(table), priority=priority)
        for fname, v in (match or {}).items():
            fm = e.match.add(field_id=self.field_id(table, fname))
            if isinstance(v, int):
                fm.exact.value = enc(v)
            elif v[0] == "lpm":
                fm.lpm.value, fm.lpm.prefix_len = enc(v[1]), v[2]
            elif v[0] == "ternary":
                fm.ternary.value, fm.ternary.mask = enc(v[1]), enc(v[2])
            elif v[0] == "range":
                fm.range.low, fm.range.high = enc(v[1]), enc(v[2])
            elif v[0] == "optional":
                fm.optional.value = enc(v[1])
        if action is not None:
            e.action.action.CopyFrom(self.act(action, **params))
        return e


def update(kind: str, op: str = "INSERT", **entity: Any) -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=getattr(p4runtime_pb2.Update, op))
    for k, v in entity.items():
        getattr(u.entity, k).CopyFrom(v)
    return u


def ins(e: p4runtime_pb2.TableEntry, op: str = "INSERT") -> p4runtime_pb2.Update:
    return update("table_entry", op, table_entry=e)


def errors_of(exc: grpc.RpcError) -> list[p4runtime_pb2.Error]:
    """The per-update p4.v1.Error list of a failed Write."""
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            st = status_pb2.Status.FromString(value)
            out = []
            for d in st.details:
                err = p4runtime_pb2.Error()
                d.Unpack(err)
                out.append(err)
            return out
    return []


class RawClient:
    def __init__(self, port: int, device_id: int = 0) -> None:
        self.device_id = device_id
        # big batches fail with one p4.v1.Error per update in the status trailer
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_metadata_size", 1 << 24)])
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: queue.Queue = queue.Queue()
        self.inbox: queue.Queue = queue.Queue()
        self.election_id = 0
        self.stream_error: grpc.RpcError | None = None
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                self.inbox.put(msg)
        except grpc.RpcError as exc:
            self.stream_error = exc
            self.inbox.put(exc)

    def send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._requests.put(msg)

    def next(self, kind: str, timeout: float = 5.0) -> Any:
        """The next stream message of ``kind`` (arbitration, packet, digest, error)."""
        while True:
            msg = self.inbox.get(timeout=timeout)
            if isinstance(msg, grpc.RpcError):
                raise msg
            if msg.WhichOneof("update") == kind:
                return getattr(msg, kind)

    def arbitrate(self, election_id: int) -> p4runtime_pb2.MasterArbitrationUpdate:
        self.election_id = election_id
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.low = election_id
        self.send(req)
        return self.next("arbitration")

    def _eid(self, msg: Any) -> None:
        msg.device_id = self.device_id
        msg.election_id.low = self.election_id

    def set_pipeline(self, p4info: p4info_pb2.P4Info | None, device_config: bytes, action: str = "VERIFY_AND_COMMIT",
                     cookie: int | None = None) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            action=getattr(p4runtime_pb2.SetForwardingPipelineConfigRequest, action))
        self._eid(req)
        if p4info is not None:
            req.config.p4info.CopyFrom(p4info)
        if device_config:
            req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req, timeout=60)

    def commit(self) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(action=p4runtime_pb2.SetForwardingPipelineConfigRequest.COMMIT)
        self._eid(req)
        self.stub.SetForwardingPipelineConfig(req, timeout=60)

    def get_pipeline(self, response_type: str = "ALL") -> p4runtime_pb2.ForwardingPipelineConfig:
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=getattr(p4runtime_pb2.GetForwardingPipelineConfigRequest, response_type))
        return self.stub.GetForwardingPipelineConfig(req, timeout=10).config

    def write(self, *updates: p4runtime_pb2.Update) -> None:
        req = p4runtime_pb2.WriteRequest(updates=list(updates))
        self._eid(req)
        self.stub.Write(req, timeout=60)

    def write_codes(self, *updates: p4runtime_pb2.Update) -> list[int]:
        """Canonical code of each update (all 0 when the write succeeded)."""
        try:
            self.write(*updates)
        except grpc.RpcError as exc:
            errs = errors_of(exc)
            assert exc.code() == grpc.StatusCode.UNKNOWN, exc
            assert len(errs) == len(updates)
            return [e.canonical_code for e in errs]
        return [0] * len(updates)

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        return [e for r in self.read_responses(*entities) for e in r.entities]

    def read_responses(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.ReadResponse]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=list(entities))
        return list(self.stub.Read(req, timeout=60))

    def close(self) -> None:
        self._requests.put(None)
        self.channel.close()


def entity(**kw: Any) -> p4runtime_pb2.Entity:
    e = p4runtime_pb2.Entity()
    for k, v in kw.items():
        getattr(e, k).CopyFrom(v)
    return e
