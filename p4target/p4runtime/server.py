"""The P4Runtime gRPC service (``p4.v1.P4Runtime``, spec v1.4) over a ``Device``.

``P4RuntimeServer(device, addr)`` serves one device: arbitration on StreamChannel,
packet I/O and digests through the Device, pipeline push/pull, Write with per-update
error reporting, streamed Read, Capabilities. All Switch calls happen under
``device.lock``; a server-level lock orders pipeline changes against writes.
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

import grpc
from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from google.protobuf.internal import api_implementation

from p4target.p4runtime.arbitration import Arbiter, Client, uint128
from p4target.p4runtime.digests import DigestLists
from p4target.p4runtime.errors import (
    ABORTED,
    DONE,
    FAILED_PRECONDITION,
    INTERNAL,
    NOT_FOUND,
    OK,
    PERMISSION_DENIED,
    UNIMPLEMENTED,
    Outcome,
    P4RTError,
    abort_with_status,
    batch_status,
    grpc_code,
    invalid,
)
from p4target.p4runtime.packet_io import build_packet_out_frame, parse_packet_in
from p4target.p4runtime.pipeline import new_state, replay, snapshot, verify
from p4target.p4runtime.placement import pin_process, resolve_cpu
from p4target.p4runtime.read import read_encoded
from p4target.p4runtime.rollback import inverse
from p4target.p4runtime.state import PipelineState
from p4target.p4runtime.limits import ServerLimits
from p4target.p4runtime.tls import ServerTLS, add_port
from p4target.p4runtime.transports import make_transport
from p4target.p4runtime.write_choice import choose_apply_update

log = logging.getLogger(__name__)

API_VERSION = "1.4.1"
READ_CHUNK = 1000  # entities per ReadResponse: large reads come in several messages
OUTBOX_LIMIT = 4096  # queued stream messages per client before packet-ins are dropped
GC_PAUSE_MIN_UPDATES = 64  # batches this large run with the cyclic collector paused

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest
_WRITE_RESPONSE = p4runtime_pb2.WriteResponse()  # empty; serialised by gRPC, never changed
_CONTINUE_ON_ERROR = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
_ATOMICITIES = frozenset((_CONTINUE_ON_ERROR, p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                          p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC))
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest


@dataclass
class _Saved:
    """A config saved with VERIFY_AND_SAVE: writes go to a scratch device until COMMIT."""

    state: PipelineState
    scratch: Any
    updates: list[p4runtime_pb2.Update] = field(default_factory=list)


class _CollectorPaused:
    """Keep Python's cyclic garbage collector out of a large batch.

    Every stored entry is a new long-lived object, so a batch of 1,000 sets off several
    collections, and those that reach the oldest generation walk every entry already
    installed, a share of a batch's time that grows with the table (measured in
    docs/performance.md). Paused, it runs once after the batch instead. Reference
    counting still frees everything as usual; only cycles wait for that collection.
    A class, not a generator: a single-entry Write pays two method calls for it.
    """

    __slots__ = ("pause",)

    def __init__(self, updates: int) -> None:
        self.pause = updates >= GC_PAUSE_MIN_UPDATES and gc.isenabled()

    def __enter__(self) -> None:
        if self.pause:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.pause:
            gc.enable()


class _Servicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, server: "P4RuntimeServer") -> None:
        self.s = server

    # ---- helpers ---------------------------------------------------------------------
    def _abort(self, context: grpc.ServicerContext, err: P4RTError) -> None:
        context.abort(grpc_code(err.code), err.message)

    def _internal(self, context: grpc.ServicerContext, what: str, exc: Exception) -> None:
        log.exception("%s: %s failed unexpectedly", self.s.label, what)
        context.abort(grpc.StatusCode.INTERNAL, f"{what} failed inside the target: {exc}")

    def _check_device(self, device_id: int) -> None:
        if device_id != self.s.device_id:
            raise P4RTError(NOT_FOUND, f"device id {device_id} is not this device ({self.s.device_id})")

    def _check_primary(self, election_id: p4runtime_pb2.Uint128, role: str, has_eid: bool) -> None:
        if role:
            raise P4RTError(UNIMPLEMENTED, "only the default role is supported; leave role unset")
        if not has_eid or not self.s.arbiter.is_primary(uint128(election_id)):
            raise P4RTError(PERMISSION_DENIED, "this client is not the primary: open a StreamChannel and "
                            "arbitrate with the highest election id, then use that election id")

    # ---- Write -------------------------------------------------------------------------
    def Write(self, request, context):
        # The hot path of batch-1 writes. It runs on the transport's loop thread (transports.INLINE_METHODS):
        # no other call makes progress meanwhile, so it must not wait for anything slow.
        try:
            if request.device_id != self.s.device_id:
                self._check_device(request.device_id)
            self._check_primary(request.election_id, request.role, request.HasField("election_id"))
            outcomes = self.s.write(request.updates, request.atomicity)
        except P4RTError as err:
            self._abort(context, err)
        except Exception as exc:  # a bug answers INTERNAL, the server lives on
            self._internal(context, "Write", exc)
        if outcomes.count(DONE) != len(outcomes):  # every success is the shared DONE tuple
            abort_with_status(context, batch_status(outcomes))
        return _WRITE_RESPONSE

    # ---- Read --------------------------------------------------------------------------
    def Read(self, request, context):
        try:
            self._check_device(request.device_id)
            found, errors = self.s.read(request.entities)
        except P4RTError as err:
            self._abort(context, err)
        except Exception as exc:
            self._internal(context, "Read", exc)
        yield from self.s.chunks(found)
        if any(code for code, _ in errors):
            # the entities of the valid requests were sent; the status says which failed
            abort_with_status(context, batch_status(errors))

    # ---- pipeline ----------------------------------------------------------------------
    def SetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            self._check_primary(request.election_id, request.role, request.HasField("election_id"))
            self.s.set_pipeline(request.action, request.config if request.HasField("config") else None)
        except P4RTError as err:
            self._abort(context, err)
        except Exception as exc:
            self._internal(context, "SetForwardingPipelineConfig", exc)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            return self.s.get_pipeline(request.response_type)
        except P4RTError as err:
            self._abort(context, err)

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    # ---- StreamChannel -------------------------------------------------------------------
    def StreamChannel(self, request_iterator, context):
        client = Client(outbox=queue.Queue())
        self.s.stream_opened(client)

        def pump() -> None:
            try:
                for msg in request_iterator:
                    err = self.s.stream_message(client, msg)
                    if err is not None:
                        client.outbox.put(err)
            except Exception as exc:  # the client went away or sent garbage
                log.debug("stream %d reader ended: %s", client.ident, exc)
            finally:
                client.outbox.put(None)

        reader = threading.Thread(target=pump, name=f"p4rt-stream-{client.ident}", daemon=True)
        reader.start()
        context.add_callback(lambda: client.outbox.put(None))
        try:
            while True:
                item = client.outbox.get()
                if item is None:
                    break
                if isinstance(item, P4RTError):
                    context.abort(grpc_code(item.code), item.message)
                yield item
        finally:
            self.s.stream_closed(client)


class P4RuntimeServer:
    """P4Runtime for one ``p4target.device.Device`` on ``addr`` (``host:port``, port 0 = any).

    ``election_timeout`` is accepted for the contract's signature and not used: a
    client is live exactly as long as its StreamChannel. ``max_workers`` bounds the
    gRPC thread pool; every open StreamChannel holds one worker.

    ``cpu``: where the threads of this process run once the server starts (see
    ``placement``): None or ``"any"`` leaves them alone (the default for a server
    embedded in another program), ``"auto"`` keeps them all on one CPU chosen by the
    device id (what ``p4target run`` does), a number keeps them on that CPU. A CPU
    the process may not use raises ``PlacementError`` here, before anything starts.

    ``limits``: what one client may use (``limits.ServerLimits``; its defaults when
    not given): docs/p4runtime.md, "Limits and hardening".

    ``compiled_write``: whether writes go through the compiled write path of
    ``p4target/accel/`` (``write_choice.choose_apply_update``; None: when it is built
    and ``P4TARGET_NATIVE`` is not 0; ``write_path`` says which was taken). Either way
    the answers are the same.

    ``tls``: listen with mutual TLS (``tls.ServerTLS``: clients need a certificate its
    CA signed), on ``grpc.server``; None: plaintext.
    """

    def __init__(self, device: Any, addr: str = "127.0.0.1:9559", election_timeout: float | None = None,
                 max_workers: int = 32, cpu: int | str | None = None, limits: ServerLimits | None = None,
                 compiled_write: bool | None = None, tls: ServerTLS | None = None) -> None:
        if api_implementation.Type() != "upb":
            log.warning("protobuf runs on the '%s' backend, not upb: P4Runtime will be much slower; "
                        "install a current protobuf wheel", api_implementation.Type())
        self.device = device
        self.device_id = getattr(device, "device_id", 0)
        self.label = getattr(device, "label", f"device {self.device_id}")  # how log lines name it
        self.addr = addr
        self.election_timeout = election_timeout
        self.arbiter = Arbiter(self.device_id)
        self.lock = threading.RLock()
        self.state: PipelineState | None = None
        self.saved: _Saved | None = None
        self.bound_port = 0
        self.packet_ins_dropped = 0
        self.packet_outs_dropped = 0
        self.digest_lists = DigestLists()
        self._max_workers = max_workers
        self._grpc: Any = None  # the gRPC server, from transports.make_transport
        self.transport = ""  # which, once started: "h2" or "grpc.server"
        # chosen here, explicitly: the compiled write path when built, else write.py's
        self._apply_update, self.write_path = choose_apply_update(compiled_write)
        self.cpu = resolve_cpu(cpu, self.device_id)  # None: not pinned
        self.limits = limits or ServerLimits()
        self.tls = tls

    # ---- lifecycle -----------------------------------------------------------------
    def start(self) -> None:
        if self.cpu is not None:  # before gRPC starts its threads: they inherit it
            moved = pin_process(self.cpu)
            log.info("%s: the %d threads of this process kept on CPU %d", self.label, moved, self.cpu)
        self._grpc, self.transport = make_transport(
            self._max_workers,
            [("grpc.max_send_message_length", 256 * 1024 * 1024),
             # gRPC sets SO_REUSEPORT by default: a second switch on the same port would
             # share it silently (its clients reaching either device); refuse instead.
             ("grpc.so_reuseport", 0)], self.device_id, self.limits, secure=self.tls is not None)
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(_Servicer(self), self._grpc)
        self.bound_port = add_port(self._grpc, self.addr, self.tls)
        if self.bound_port == 0:
            raise OSError(f"cannot listen on {self.addr}; is the port in use?")
        self.attach()
        self._grpc.start()
        log.info("%s: P4Runtime listening on port %d%s", self.label, self.bound_port,
                 " (mutual TLS)" if self.tls is not None else "")

    def attach(self) -> None:
        """Serve the device without a gRPC server of its own: what ``start`` does
        besides listening. A ``shared_server.SharedP4RuntimeServer`` calls it for each
        of the devices it serves on one address (``servicer()`` answers their calls)."""
        self._adopt_running_pipeline()
        self.device.add_packet_in_listener(self._on_packet_in)
        if hasattr(self.device, "add_digest_listener"):
            self.device.add_digest_listener(self._on_digest)

    def servicer(self) -> p4runtime_pb2_grpc.P4RuntimeServicer:
        """The ``p4.v1.P4Runtime`` servicer of this device."""
        return _Servicer(self)

    def detach(self) -> None:
        """Undo ``attach``: end the streams and leave the device's listeners."""
        for c in list(self.arbiter.clients):
            c.outbox.put(None)
        for remove, cb in ((getattr(self.device, "remove_packet_in_listener", None), self._on_packet_in),
                           (getattr(self.device, "remove_digest_listener", None), self._on_digest)):
            if remove is not None:
                try:
                    remove(cb)
                except (ValueError, KeyError):
                    pass

    def _adopt_running_pipeline(self) -> None:
        """A device started with a program (``p4target run prog.p4``) serves it at once.

        The P4Info is the generated one (ids as p4c assigns them); the device config
        is the source bundle of the program's file when it can be read again.
        """
        sw = self.device.switch
        if sw is None or self.state is not None:
            return
        from p4target.device_config import device_config_from_file
        from p4target.errors import P4Error
        from p4target.p4runtime.schema import build_schema

        program = sw.program
        try:
            bundle = device_config_from_file(program.model.source)
        except P4Error:
            bundle = b""
        self.state = PipelineState(schema=build_schema(program.model), compiled=program, device_config=bundle)
        log.info("%s: serving the pipeline loaded at start (%s)", self.label, program.model.source)

    def stop(self, grace: float | None = 0.5) -> None:
        if self._grpc is not None:
            for c in list(self.arbiter.clients):
                c.outbox.put(None)
            # Bounded: grpc's stop event is sometimes never set after a stream whose
            # request could not be deserialised (seen under load); every call is
            # cancelled once the grace period is over, so waiting longer gains nothing.
            if not self._grpc.stop(grace).wait((grace or 0.0) + 5.0):
                log.warning("%s: gRPC server did not confirm its shutdown", self.label)
            self._grpc = None
            self.detach()

    # ---- streams ---------------------------------------------------------------------
    def stream_opened(self, client: Client) -> None:
        log.debug("%s: stream %d opened", self.label, client.ident)

    def stream_closed(self, client: Client) -> None:
        for c, msg in self.arbiter.remove(client):
            c.outbox.put(msg)
        log.debug("%s: stream %d closed", self.label, client.ident)

    def stream_message(self, client: Client, msg: p4runtime_pb2.StreamMessageRequest) -> Any:
        """Handle one stream message; returns a P4RTError that ends the stream, if any."""
        which = msg.WhichOneof("update")
        if which == "arbitration":
            try:
                for c, out in self.arbiter.arbitrate(client, msg.arbitration):
                    c.outbox.put(out)
            except P4RTError as err:
                return err
            return None
        if client.election_id is None and client not in self.arbiter.clients:
            return P4RTError(FAILED_PRECONDITION, "send a MasterArbitrationUpdate first on a new stream")
        if which == "packet":
            self._packet_out(client, msg.packet)
        elif which == "digest_ack":
            ack = msg.digest_ack
            st = self.state
            if st is None or ack.digest_id not in st.schema.digests:
                reply = p4runtime_pb2.StreamMessageResponse()
                reply.error.canonical_code = NOT_FOUND
                reply.error.message = f"digest id {ack.digest_id} is not in the P4Info"
                reply.error.digest_list_ack.digest_list_ack.CopyFrom(ack)
                client.outbox.put(reply)
            else:
                self.digest_lists.ack(ack.digest_id, ack.list_id)
        else:
            self._stream_error(client, invalid(f"unsupported stream message '{which}'"))
        return None

    def _stream_error(self, client: Client, err: P4RTError, packet: p4runtime_pb2.PacketOut | None = None) -> None:
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.error.canonical_code = err.code
        msg.error.message = err.message
        if packet is not None:
            msg.error.packet_out.packet_out.CopyFrom(packet)
        client.outbox.put(msg)

    def _packet_out(self, client: Client, packet: p4runtime_pb2.PacketOut) -> None:
        primary = self.arbiter.primary()
        if primary is not client:
            self.packet_outs_dropped += 1
            self._stream_error(client, P4RTError(PERMISSION_DENIED, "only the primary may send packets"), packet)
            return
        st = self.state
        if st is None:
            self.packet_outs_dropped += 1
            self._stream_error(client, P4RTError(FAILED_PRECONDITION, "no forwarding pipeline config is set"), packet)
            return
        try:
            frame = build_packet_out_frame(st.schema.packet_out, packet)
        except P4RTError as err:
            self.packet_outs_dropped += 1
            self._stream_error(client, err, packet)
            return
        try:
            self.device.packet_out(frame)
        except Exception as exc:  # a frame must never take the server down
            log.exception("%s: packet-out failed", self.label)
            self._stream_error(client, P4RTError(INTERNAL, f"packet-out failed: {exc}"), packet)

    def _send_to_primary(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        primary = self.arbiter.primary()
        if primary is None:
            self.packet_ins_dropped += 1
            return
        if primary.outbox.qsize() >= OUTBOX_LIMIT:
            self.packet_ins_dropped += 1
            return
        primary.outbox.put(msg)

    def _on_packet_in(self, frame: bytes) -> None:
        st = self.state
        info = st.schema.packet_in if st is not None else None
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.packet.CopyFrom(parse_packet_in(info, frame))
        self._send_to_primary(msg)

    def _on_digest(self, name: str, values: list[tuple[int, ...]]) -> None:
        st = self.state
        if st is None:
            return
        try:
            did = st.schema.id_of("digest", name)
        except KeyError:
            return
        config = st.digest_configs.get(did)
        if config is None:
            return  # not enabled with a DigestEntry
        for lst in self.digest_lists.lists(did, config, values, as_tuple=did in st.schema.tuple_digests):
            msg = p4runtime_pb2.StreamMessageResponse()
            msg.digest.CopyFrom(lst)
            self._send_to_primary(msg)

    # ---- pipeline ------------------------------------------------------------------------
    def set_pipeline(self, action: int, config: p4runtime_pb2.ForwardingPipelineConfig | None) -> None:
        with self.lock:
            if action == SetAction.COMMIT:
                if config is not None and (config.HasField("p4info") or config.p4_device_config):
                    raise invalid("COMMIT takes no config; it commits the one saved with VERIFY_AND_SAVE")
                if self.saved is None:
                    raise P4RTError(NOT_FOUND, "no saved config to commit; use VERIFY_AND_SAVE first")
                saved, self.saved = self.saved, None
                if config is not None and config.HasField("cookie"):
                    saved.state.cookie = config.cookie.cookie
                self._commit(saved.state.fresh(), saved.updates, old=None)
                return
            if action not in (SetAction.VERIFY, SetAction.VERIFY_AND_SAVE, SetAction.VERIFY_AND_COMMIT,
                              SetAction.RECONCILE_AND_COMMIT):
                raise invalid("SetForwardingPipelineConfig needs an action (VERIFY, VERIFY_AND_SAVE, "
                              "VERIFY_AND_COMMIT, COMMIT or RECONCILE_AND_COMMIT)")
            if config is None:
                raise invalid("SetForwardingPipelineConfig needs a config for this action")
            compiled, schema = verify(config)
            state = new_state(compiled, schema, config)
            if action == SetAction.VERIFY:
                return
            if action == SetAction.VERIFY_AND_SAVE:
                scratch = self._scratch_device(compiled)
                self.saved = _Saved(state, scratch)
                return
            carry: list[p4runtime_pb2.Update] = []
            old = None
            if action == SetAction.RECONCILE_AND_COMMIT and self.state is not None:
                with self.device.lock:
                    carry = snapshot(self.device.switch, self.state)
                old = self.state.schema
            self.saved = None
            self._commit(state, carry, old)

    def _scratch_device(self, compiled: Any) -> Any:
        from p4target.device import Device

        scratch = Device(device_id=self.device_id, cpu_port=getattr(self.device, "cpu_port", None))
        scratch.load(compiled)
        return scratch

    def _commit(self, state: PipelineState, updates: list[p4runtime_pb2.Update], old: Any) -> None:
        from p4target.errors import P4Error

        with self.device.lock:
            try:
                self.device.load(state.compiled)
            except P4Error as exc:  # the device keeps the old pipeline
                raise invalid(f"the device cannot load this pipeline: {exc}") from None
            kept, dropped = replay(self.device.switch, state, updates, old, self._apply_update)
        self.state = state
        log.info("%s: pipeline committed (%d entities carried over, %d dropped)",
                 self.label, kept, dropped)

    def get_pipeline(self, response_type: int) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        st = self.state
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if st is None:
            return resp  # no config known yet: the top-level config is left unset (spec)
        cfg = resp.config
        cfg.cookie.cookie = st.cookie
        if response_type in (GetType.ALL, GetType.P4INFO_AND_COOKIE):
            cfg.p4info.CopyFrom(st.schema.p4info)
        if response_type in (GetType.ALL, GetType.DEVICE_CONFIG_AND_COOKIE):
            cfg.p4_device_config = st.device_config
        if response_type not in (GetType.ALL, GetType.COOKIE_ONLY, GetType.P4INFO_AND_COOKIE,
                                 GetType.DEVICE_CONFIG_AND_COOKIE):
            raise invalid(f"unknown response type {response_type}")
        return resp

    # ---- write / read ---------------------------------------------------------------------
    def _target(self) -> tuple[Any, PipelineState, _Saved | None]:
        if self.saved is not None:
            return self.saved.scratch, self.saved.state, self.saved
        if self.state is None:
            raise P4RTError(FAILED_PRECONDITION, "no forwarding pipeline config is set; push one with SetForwardingPipelineConfig")
        return self.device, self.state, None

    def write(self, updates, atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR) -> list[Outcome]:
        """Apply a batch; one (code, message) per update.

        CONTINUE_ON_ERROR applies each update on its own. ROLLBACK_ON_ERROR and
        DATAPLANE_ATOMIC undo the applied updates when one fails (all or none); the
        batch holds the device lock throughout, so no frame sees it half done.
        """
        if atomicity not in _ATOMICITIES:
            raise invalid(f"unknown atomicity {atomicity}")
        all_or_none = atomicity != _CONTINUE_ON_ERROR
        outcomes: list[Outcome] = []
        with self.lock, _CollectorPaused(len(updates)):
            dev, st, saved = self._target()
            with dev.lock:
                sw = dev.switch
                if all_or_none:
                    outcomes = self._write_all_or_none(sw, st, updates)
                else:
                    add = outcomes.append
                    for u in updates:
                        try:
                            self._apply_update(sw, st, u)
                            add(DONE)
                        except P4RTError as err:
                            add((err.code, err.message))
                        except Exception as exc:  # a bug must cost one update, not the server
                            log.exception("%s: update failed unexpectedly", self.label)
                            add((INTERNAL, f"internal error: {exc}"))
                if saved is not None:
                    saved.updates.extend(u for u, (code, _) in zip(updates, outcomes, strict=False) if code == OK)
        return outcomes

    def _write_all_or_none(self, sw: Any, st: PipelineState, updates) -> list[Outcome]:
        outcomes: list[Outcome] = []
        undo: list[list[p4runtime_pb2.Update]] = []
        for n, u in enumerate(updates):
            inv = inverse(sw, st, u)
            try:
                self._apply_update(sw, st, u)
                outcomes.append(DONE)
                undo.append(inv)
                continue
            except P4RTError as err:
                outcomes.append((err.code, err.message))
            except Exception as exc:  # a bug must cost one update, not the server
                log.exception("%s: update failed unexpectedly", self.label)
                outcomes.append((INTERNAL, f"internal error: {exc}"))
            self._roll_back(sw, st, undo)
            note = f"not applied: update {n} of the batch failed and the batch was rolled back"
            aborted = (ABORTED, note)
            return [o if o[0] != OK else aborted for o in outcomes] + [aborted] * (len(updates) - n - 1)
        return outcomes

    def _roll_back(self, sw: Any, st: PipelineState, undo: list[list[p4runtime_pb2.Update]]) -> None:
        for inv in reversed(undo):
            for u in reversed(inv):
                try:
                    self._apply_update(sw, st, u)
                except Exception:  # keep undoing the rest
                    log.exception("%s: rollback step failed", self.label)

    def read(self, entities) -> tuple[list[bytes], list[Outcome]]:
        """Encoded entities matching each request (``ReadResponse.entities`` elements,
        see ``wire``), and one (code, message) per request (spec "Batch Processing" of
        Read): gathered under the lock, then streamed by the caller."""
        found: list[bytes] = []
        outcomes: list[Outcome] = []
        with self.lock:
            dev, st, _ = self._target()
            with dev.lock:
                for ent in entities:
                    try:
                        found.extend(read_encoded(dev.switch, st, ent))
                        outcomes.append(DONE)
                    except P4RTError as err:
                        outcomes.append((err.code, err.message))
                    except Exception as exc:  # one bad request, not the server
                        log.exception("%s: read failed unexpectedly", self.label)
                        outcomes.append((INTERNAL, f"internal error: {exc}"))
        return found, outcomes

    @staticmethod
    def chunks(found: list[bytes]) -> Iterator[p4runtime_pb2.ReadResponse]:
        """ReadResponses of at most READ_CHUNK entities each (one empty one for nothing)."""
        if not found:
            yield p4runtime_pb2.ReadResponse()
            return
        for i in range(0, len(found), READ_CHUNK):
            yield p4runtime_pb2.ReadResponse.FromString(b"".join(found[i:i + READ_CHUNK]))
