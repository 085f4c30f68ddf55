"""Which gRPC transport the server runs on: ``core_server`` by default, the standard
``grpc.server`` when ``P4TARGET_GRPC_TRANSPORT=grpc`` asks for it or when this grpcio's
core binding is not the one ``core_server`` was written against; either serves the
same P4Runtime (arbitration, writes with per-update errors, reads)."""

from __future__ import annotations

import logging

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2 as pb

from p4target.device import Device
from p4target.p4runtime import core_server
from p4target.p4runtime.server import TRANSPORT_ENV, P4RuntimeServer
from tests.p4runtime.p4rt_client import Names, RawClient, entity, errors_of, ins


def _serve_and_use(rt_config) -> str:
    """Start a server, install and read an entry, refuse a duplicate; its transport."""
    server = P4RuntimeServer(Device(device_id=1), "127.0.0.1:0")
    server.start()
    try:
        client = RawClient(server.bound_port, device_id=1)
        try:
            client.arbitrate(10)
            client.set_pipeline(rt_config[0], rt_config[1])
            names = Names(rt_config[0])
            entry = names.entry("exact_t", {"hdr.eth.dst_addr": 0x0A0000000007}, action="fwd", port=2)
            client.write(ins(entry))
            table = pb.TableEntry(table_id=names.table_id("exact_t"))
            assert [e.table_entry.match for e in client.read(entity(table_entry=table))] == [entry.match]
            with pytest.raises(grpc.RpcError) as dup:
                client.write(ins(entry))
            assert [e.canonical_code for e in errors_of(dup.value)] == [code_pb2.ALREADY_EXISTS]
        finally:
            client.close()
    finally:
        server.stop()
    return server.transport


def test_core_by_default(rt_config, monkeypatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    assert core_server.unavailable() is None  # this grpcio carries it
    assert _serve_and_use(rt_config) == "core"


def test_grpc_server_when_asked(rt_config, monkeypatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "grpc")
    assert _serve_and_use(rt_config) == "grpc.server"


def test_grpc_server_when_core_cannot_run_here(rt_config, monkeypatch, caplog) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    # as with a grpcio whose core binding lacks a method core_server calls
    monkeypatch.setitem(core_server._USED, "Server", (*core_server._USED["Server"], "request_call_v9"))
    why = core_server.unavailable()
    assert why == f"grpcio {grpc.__version__} has no cygrpc.Server.request_call_v9"
    with caplog.at_level(logging.WARNING, logger="p4target.p4runtime.server"):
        assert _serve_and_use(rt_config) == "grpc.server"
    assert "falls back to grpc.server" in caplog.text and why in caplog.text


def test_an_unknown_choice_is_named_and_core_used(rt_config, monkeypatch, caplog) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "fast")
    with caplog.at_level(logging.WARNING, logger="p4target.p4runtime.server"):
        assert _serve_and_use(rt_config) == "core"
    assert f"{TRANSPORT_ENV}=fast is neither 'core' nor 'grpc'" in caplog.text
