"""The asyncio P4Runtime session with one switch.

Why this shape: the session speaks P4Runtime through finsy's ``P4Client`` (gRPC
channel, arbitration stream, unary and streaming calls, error details) on the
project's upb protobuf bindings; writes go as bytes on that client's channel (see
``Session.write_updates`` for why); arbitration and the pipeline are done here
because the controller needs them to be explicit (primary or fail, push only when
the switch lacks our pipeline). Why apart from the codec (controller/codec.py): this
is the I/O; the bytes it writes and the entries it reads back are the codec's.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from finsy.p4client import P4Client, P4ClientError
from finsy.proto.p4.v1 import p4runtime_pb2

from controller import wire
from controller.codec import Codec
from controller.errors import SwitchError
from controller.pipeline import Pipeline
from controller.targets import SwitchTarget
from controller.tls import load_client_tls
from fabric.entries import Entry

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 5.0
RPC_TIMEOUT = 30.0


def _where(t: SwitchTarget) -> str:
    return f"{t.name} ({t.address}, device {t.device_id})"


def describe_error(t: SwitchTarget, exc: BaseException) -> str:
    """One line for a person: which switch, where, what went wrong."""
    if isinstance(exc, P4ClientError):
        details = "; ".join(f"update {i}: {d.canonical_code.name} {d.message}" for i, d in list(exc.details.items())[:3])
        return f"{_where(t)}: {exc.code.name} {exc.message}{' (' + details + ')' if details else ''}"
    if isinstance(exc, asyncio.TimeoutError):
        return f"{_where(t)}: no answer within {CONNECT_TIMEOUT:.0f} s; {_no_answer_hint(t)}"
    return f"{_where(t)}: {exc}"


def _no_answer_hint(t: SwitchTarget) -> str:
    """What to check when a switch does not answer: gRPC tells a refused TLS handshake
    from a switch that is not there only in its logs, so a port that takes TCP
    connections is told apart here."""
    host, _, port = t.address.rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=1.0).close()
    except (OSError, ValueError):
        return "is the switch running (make run, p4target run)?"
    if t.tls_dir:
        return (f"it takes connections but no TLS session came up with --tls-dir {t.tls_dir}: the switch "
                "speaks plaintext, or its certificate is not signed by that ca.pem, or it does not take "
                "that client.pem (another CA)")
    return "it takes connections but no P4Runtime session came up: if it serves mutual TLS, give --tls-dir"


def _method(name: str) -> str:
    """The gRPC path of a P4Runtime method, from the bindings' descriptor."""
    return "/{0}/{1}".format(*p4runtime_pb2.DESCRIPTOR.services_by_name["P4Runtime"]
                             .methods_by_name[name].full_name.rsplit(".", 1))


_WRITE_METHOD, _READ_METHOD = _method("Write"), _method("Read")


def _wildcards(c: Codec) -> list[p4runtime_pb2.Entity]:
    """The read of every table entry, and of every member and group of each profile."""
    wild = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]
    wild += [p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember(action_profile_id=i))
             for i in c.profiles.values()]
    wild += [p4runtime_pb2.Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup(action_profile_id=i))
             for i in c.profiles.values()]
    return wild


class Session:
    """A P4Runtime session with one switch: primary (to write), or ``primary=False``
    for reads only (P4Runtime reads need no arbitration, so counters and checks do
    not take the primary role from a running ``install --watch``)."""

    def __init__(self, target: SwitchTarget, election_id: int = 1, *, primary: bool = True) -> None:
        self.target = target
        self.election_id = election_id
        self.primary = primary
        tls = load_client_tls(target.tls_dir).finsy_credentials() if target.tls_dir else None
        self.client = P4Client(target.address, tls, wait_for_ready=False)
        self._write_head = wire.write_head(target.device_id, election_id)
        self._raw_calls: dict[tuple[str, bool], tuple[object, object]] = {}  # (method, stream) -> (channel, call)

    async def __aenter__(self) -> Session:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def open(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Connect and become primary, or SwitchError (every step bounded by ``timeout``)."""
        try:
            await asyncio.wait_for(self.client.open(), timeout)
            channel = self.client.channel
            assert channel is not None
            await asyncio.wait_for(channel.channel_ready(), timeout)
            if not self.primary:
                return
            upd = p4runtime_pb2.MasterArbitrationUpdate(device_id=self.target.device_id)
            upd.election_id.high = self.election_id >> 64
            upd.election_id.low = self.election_id & ((1 << 64) - 1)
            await self.client.send(p4runtime_pb2.StreamMessageRequest(arbitration=upd))
            while True:
                reply = await asyncio.wait_for(self.client.receive(), timeout)
                if reply.HasField("arbitration"):
                    break
            status = reply.arbitration.status
            if status.code != 0:
                raise SwitchError(f"{_where(self.target)}: not primary ({status.message}); another controller with a "
                                  "higher election id is connected: use --election-id")
        except BaseException as exc:
            await self.client.close()
            if isinstance(exc, (SwitchError, asyncio.CancelledError)):
                raise
            raise SwitchError(describe_error(self.target, exc)) from None

    async def close(self) -> None:
        await self.client.close()

    async def wait_closed(self) -> None:
        """Return when the switch closes the stream (it stopped or restarted)."""
        try:
            while True:
                await self.client.receive()
        except (P4ClientError, RuntimeError, grpc.RpcError):
            return

    async def _request(self, msg: Any) -> Any:  # a P4Runtime request of any kind, and its reply
        try:
            return await self.client.request(msg)
        except P4ClientError as exc:
            raise SwitchError(describe_error(self.target, exc)) from None

    async def has_pipeline(self, p: Pipeline) -> bool:
        """Does the switch run exactly ``p`` (same P4Info)?"""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.target.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            reply = await self.client.request(req)
        except P4ClientError as exc:
            if exc.is_pipeline_missing:
                return False
            raise SwitchError(describe_error(self.target, exc)) from None
        return reply.config.HasField("p4info") and reply.config.p4info == p.p4info

    async def set_pipeline(self, p: Pipeline) -> None:
        cfg = p4runtime_pb2.ForwardingPipelineConfig(p4info=p.p4info, p4_device_config=p.device_config)
        cfg.cookie.cookie = p.cookie
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.target.device_id, config=cfg,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.high = self.election_id >> 64
        req.election_id.low = self.election_id & ((1 << 64) - 1)
        await self._request(req)
        log.info("%s: pipeline %s installed", self.target.name, p.program)

    def _raw(self, method: str, stream: bool, serializer: Callable[[Any], bytes] | None,
             deserializer: Callable[[bytes], Any] | None) -> Any:  # a grpc.aio call object
        """A call of ``method`` on finsy's channel with these (de)serialisers, made once
        per channel (a reconnected client has a new one)."""
        channel = self.client.channel
        if channel is None:
            raise SwitchError(f"{_where(self.target)}: not connected")
        key = (method, stream)
        made = self._raw_calls.get(key)
        if made is None or made[0] is not channel:
            make = channel.unary_stream if stream else channel.unary_unary
            made = self._raw_calls[key] = (channel, make(method, request_serializer=serializer,
                                                         response_deserializer=deserializer))
        return made[1]

    async def write_updates(self, updates: Sequence[bytes]) -> None:
        """Send a WriteRequest made of ``updates`` (``updates`` fields, see
        controller/wire.py) as this device's primary, as bytes (joined once, with the
        request's head).

        Why around finsy here: ``P4Client.request`` takes a message and the stub
        serialises it, so bytes already encoded would be parsed into a message only to
        be serialised again, client CPU per entry that the switches on the same
        cores lose. This call goes on finsy's channel (its
        connection, options and arbitration stream) with the same method, without a
        request serialiser, and a refusal is raised as finsy's P4ClientError with the
        per-update details, as finsy's own calls are."""
        call = self._raw(_WRITE_METHOD, False, None, p4runtime_pb2.WriteResponse.FromString)
        try:
            await call(b"".join((self._write_head, *updates)), timeout=RPC_TIMEOUT)
        except grpc.RpcError as exc:
            raise SwitchError(describe_error(self.target, P4ClientError(exc, "Write"))) from None

    async def read_entity_bytes(self, c: Codec) -> list[bytes]:
        """Every table entry, profile member and group the switch holds (not defaults),
        each as the bytes of its Entity message: the reconciler compares them with the
        bytes it would write and decodes only those that differ (decoding a read
        entity into an entry costs far more than comparing its bytes).
        Responses come as bytes, around finsy for the same reason as writes."""
        req = p4runtime_pb2.ReadRequest(device_id=self.target.device_id, entities=_wildcards(c))
        call = self._raw(_READ_METHOD, True, p4runtime_pb2.ReadRequest.SerializeToString, None)
        out: list[bytes] = []
        try:
            async for reply in call(req, timeout=RPC_TIMEOUT):
                out += wire.entities_of(reply)
        except grpc.RpcError as exc:
            raise SwitchError(describe_error(self.target, P4ClientError(exc, "Read"))) from None
        return out

    async def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.target.device_id, entities=entities)
        out: list[p4runtime_pb2.Entity] = []
        try:
            async for reply in self.client.request_iter(req):
                out.extend(reply.entities)
        except P4ClientError as exc:
            raise SwitchError(describe_error(self.target, exc)) from None
        return out

    async def read_entries(self, c: Codec) -> list[Entry]:
        """Every table entry, profile member and group the switch holds (not defaults)."""
        out = []
        for ent in await self.read(_wildcards(c)):
            e = c.decode(ent)
            if e is not None:
                out.append(e)
        return out

    async def read_counter(self, c: Codec, name: str) -> dict[int, tuple[int, int]]:
        """Counter ``name``: index -> (packets, bytes)."""
        cid, _ = c.counters[name]
        ents = await self.read([p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=cid))])
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count, e.counter_entry.data.byte_count)
                for e in ents}

    def _register_id(self, c: Codec, name: str) -> int:
        for r in c.p4info.registers:
            if r.preamble.name == name:
                return r.preamble.id
        raise SwitchError(f"{_where(self.target)}: program {self.target.program} has no register {name}")

    async def read_register(self, c: Codec, name: str) -> dict[int, int]:
        """Register ``name``: index -> value (every cell)."""
        rid = self._register_id(c, name)
        ents = await self.read([p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(register_id=rid))])
        return {e.register_entry.index.index: int.from_bytes(e.register_entry.data.bitstring, "big") for e in ents}

    async def write_register(self, c: Codec, name: str, index: int, value: int) -> None:
        """Set cell ``index`` of register ``name`` (a MODIFY, as primary)."""
        r = p4runtime_pb2.RegisterEntry(register_id=self._register_id(c, name))
        r.index.index = index
        r.data.bitstring = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
        req = p4runtime_pb2.WriteRequest(device_id=self.target.device_id, updates=[p4runtime_pb2.Update(
            type=p4runtime_pb2.Update.MODIFY, entity=p4runtime_pb2.Entity(register_entry=r))])
        req.election_id.high = self.election_id >> 64
        req.election_id.low = self.election_id & ((1 << 64) - 1)
        await self._request(req)
