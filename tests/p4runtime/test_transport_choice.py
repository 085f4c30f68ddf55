"""Which gRPC transport the server runs on: ``h2_server`` (nghttp2) by default, the
standard ``grpc.server`` when ``P4TARGET_GRPC_TRANSPORT=grpc`` asks for it or when the
HTTP/2 loop cannot run here (one warning says why); each serves the same P4Runtime
(arbitration, writes with per-update errors, reads)."""

from __future__ import annotations

import logging

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2 as pb

from p4target.device import Device
from p4target.accel import h2_server
from p4target.p4runtime.server import P4RuntimeServer
from p4target.p4runtime.transports import TRANSPORT_ENV
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


def test_h2_by_default(rt_config, monkeypatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    assert h2_server.unavailable() is None  # make deps installs nghttp2's headers
    assert _serve_and_use(rt_config) == "h2"


def test_grpc_server_when_the_h2_loop_cannot_be_had(rt_config, monkeypatch, caplog, tmp_path) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    # as on a machine without nghttp2's headers: the loop is neither loaded nor buildable
    monkeypatch.setattr(h2_server, "_headers_present", lambda cc: False)
    monkeypatch.setenv("P4TARGET_CACHE", str(tmp_path))  # an empty cache: no loop built
    why = h2_server.unavailable()
    assert why == "nghttp2's headers are missing: apt-get install libnghttp2-dev (make deps does)"
    with caplog.at_level(logging.WARNING, logger="p4target.p4runtime.transports"):
        assert _serve_and_use(rt_config) == "grpc.server"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.text  # one line, naming the cause
    assert "cannot use its h2 transport and runs on grpc.server" in warnings[0].getMessage()
    assert why in warnings[0].getMessage()


def test_grpc_server_when_asked(rt_config, monkeypatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "grpc")
    assert _serve_and_use(rt_config) == "grpc.server"


def test_an_unknown_choice_is_named_and_h2_used(rt_config, monkeypatch, caplog) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "fast")
    with caplog.at_level(logging.WARNING, logger="p4target.p4runtime.transports"):
        assert _serve_and_use(rt_config) == "h2"
    assert f"{TRANSPORT_ENV}=fast is not one of h2, grpc" in caplog.text


def test_the_h2_spin_comes_from_the_environment(monkeypatch, caplog) -> None:
    monkeypatch.delenv(h2_server.SPIN_ENV, raising=False)
    assert h2_server.spin_us_from_env() == h2_server.DEFAULT_SPIN_US
    monkeypatch.setenv(h2_server.SPIN_ENV, "0")
    assert h2_server.spin_us_from_env() == 0
    monkeypatch.setenv(h2_server.SPIN_ENV, "a while")
    with caplog.at_level(logging.WARNING, logger="p4target.accel.h2_server"):
        assert h2_server.spin_us_from_env() == h2_server.DEFAULT_SPIN_US
    assert f"{h2_server.SPIN_ENV}=a while is not a number of microseconds" in caplog.text
