"""Several P4Runtime devices on one gRPC address, told apart by their device ids.

Why: a process running many switches (``p4target group``) may give each its own
address (one ``P4RuntimeServer`` each) or serve them all on one, as a multi-device
``simple_switch_grpc`` deployment or a real chassis does: every P4Runtime request
names its device (``device_id`` of Write, Read, SetForwardingPipelineConfig,
GetForwardingPipelineConfig; the first ``MasterArbitrationUpdate`` of a
StreamChannel), so one listener can hand each call to the right device's servicer.

``SharedP4RuntimeServer(servers, addr)`` takes ``P4RuntimeServer``s that are not
started and serves them all; each keeps its own arbitration, pipeline and state, so
a bad request or a failing pipeline on one device answers that device's error only.
A request for a device id served nowhere here gets NOT_FOUND naming the ids that are;
a StreamChannel whose first message is not an arbitration update gets
FAILED_PRECONDITION (P4Runtime spec, "Client Arbitration").
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Iterator, Sequence

import grpc
from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4target.p4runtime.server import API_VERSION, P4RuntimeServer
from p4target.p4runtime.tls import ServerTLS, add_port
from p4target.p4runtime.transports import make_transport

log = logging.getLogger(__name__)


class _Router(p4runtime_pb2_grpc.P4RuntimeServicer):
    """Hands every call to the servicer of the device it names."""

    def __init__(self, by_id: dict[int, Any]) -> None:
        self.by_id = by_id
        self._ids = ", ".join(str(i) for i in sorted(by_id))

    def _pick(self, device_id: int, context: grpc.ServicerContext) -> Any:
        sv = self.by_id.get(device_id)
        if sv is None:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"device id {device_id} is not served at this address; it serves device ids {self._ids}")
        return sv

    def Write(self, request, context):
        return self._pick(request.device_id, context).Write(request, context)

    def Read(self, request, context):
        yield from self._pick(request.device_id, context).Read(request, context)

    def SetForwardingPipelineConfig(self, request, context):
        return self._pick(request.device_id, context).SetForwardingPipelineConfig(request, context)

    def GetForwardingPipelineConfig(self, request, context):
        return self._pick(request.device_id, context).GetForwardingPipelineConfig(request, context)

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def StreamChannel(self, request_iterator, context) -> Iterator[Any]:
        first = next(iter(request_iterator), None)
        if first is None:
            return
        if first.WhichOneof("update") != "arbitration":
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          "the first message of a StreamChannel must be a MasterArbitrationUpdate naming "
                          "the device id (several devices share this address)")
        sv = self._pick(first.arbitration.device_id, context)
        yield from sv.StreamChannel(itertools.chain([first], request_iterator), context)


class SharedP4RuntimeServer:
    """Serve ``servers`` (``P4RuntimeServer``s, not started; distinct device ids) on ``addr``."""

    def __init__(self, servers: Sequence[P4RuntimeServer], addr: str, max_workers: int = 64,
                 tls: ServerTLS | None = None) -> None:
        ids = [s.device_id for s in servers]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"device id {dup[0]} is given to more than one switch on {addr}; "
                             "give every switch sharing an address its own device id")
        self.servers = list(servers)
        self.addr = addr
        self.bound_port = 0
        self.transport = ""
        self._max_workers = max_workers
        self._grpc: Any = None
        self.tls = tls

    def start(self) -> None:
        self._grpc, self.transport = make_transport(
            self._max_workers,
            [("grpc.max_receive_message_length", 256 * 1024 * 1024),
             ("grpc.max_send_message_length", 256 * 1024 * 1024),
             ("grpc.so_reuseport", 0)], self.servers[0].device_id if self.servers else 0,
            secure=self.tls is not None)
        router = _Router({s.device_id: s.servicer() for s in self.servers})
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(router, self._grpc)
        self.bound_port = add_port(self._grpc, self.addr, self.tls)
        if self.bound_port == 0:
            raise OSError(f"cannot listen on {self.addr}; is the port in use?")
        for s in self.servers:
            s.bound_port = self.bound_port
            s.attach()
        self._grpc.start()
        log.info("P4Runtime for device ids %s listening on port %d", router._ids, self.bound_port)

    def stop(self, grace: float | None = 0.5) -> None:
        if self._grpc is None:
            return
        for s in self.servers:
            for c in list(s.arbiter.clients):
                c.outbox.put(None)
        if not self._grpc.stop(grace).wait((grace or 0.0) + 5.0):
            log.warning("the shared gRPC server on %s did not confirm its shutdown", self.addr)
        self._grpc = None
        for s in self.servers:
            s.detach()
