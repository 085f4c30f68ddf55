"""``p4target run --no-p4`` on veths, driven over P4Runtime: the controller pushes the
pipeline, writes an entry, and receives a frame from a veth as a packet-in."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from scapy.layers.inet6 import IPv6, UDP
from scapy.layers.l2 import Ether

from p4target.compiler import compile_file
from p4target.device_config import device_config_from_file
from p4target.p4info import build_p4info

from p4t_netlab import NetLab, recv_frames

REPO = Path(__file__).resolve().parents[3]
SPRAY = Path(__file__).parent / "p4" / "spray.p4"
CPU_PORT = 64


class StreamClient:
    """The smallest P4Runtime client this test needs: one stream, one device."""

    def __init__(self, addr: str, device_id: int) -> None:
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.out: queue.Queue = queue.Queue()
        self.inbox: queue.Queue = queue.Queue()
        self.stream = self.stub.StreamChannel(iter(self.out.get, None))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            for msg in self.stream:
                self.inbox.put(msg)
        except grpc.RpcError:
            pass

    def next(self, kind: str, timeout: float = 5.0):
        end = time.monotonic() + timeout
        while True:
            msg = self.inbox.get(timeout=max(0.01, end - time.monotonic()))
            if msg.WhichOneof("update") == kind:
                return getattr(msg, kind)

    def arbitrate(self) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.low = 1
        self.out.put(req)
        self.next("arbitration")

    def close(self) -> None:
        self.out.put(None)
        self.channel.close()


@pytest.mark.root
def test_pipeline_pushed_over_p4runtime_then_packet_in(tmp_path):
    compiled = compile_file(SPRAY)
    p4info = build_p4info(compiled.model)
    with NetLab("grpc") as lab:
        lab.veth("p4ta0", "p4ta1")
        lab.veth("p4tb0", "p4tb1")
        p = subprocess.Popen(
            [sys.executable, "-m", "p4target", "run", "--no-p4", "--netns", lab.ns,
             "-i", "1@p4ta1", "-i", "2@p4tb1", "--cpu-port", str(CPU_PORT), "--device-id", "5",
             "--grpc-addr", "127.0.0.1:0"],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        client = None
        try:
            m = None
            seen = []
            while m is None:
                line = p.stderr.readline()
                if not line:
                    pytest.fail("p4target run ended: " + "".join(seen))
                seen.append(line)
                m = re.search(r"P4Runtime on (127\.0\.0\.1:\d+)", line)
            a = lab.socket("p4ta0")
            punt = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x88B5)
                         / b"to the controller")
            # --netns: the interfaces are in the namespace, the server on our loopback
            client = StreamClient(m.group(1), 5)
            grpc.channel_ready_future(client.channel).result(timeout=10)
            client.arbitrate()
            # no pipeline yet: frames are dropped
            a.send(punt)
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=5, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
            req.election_id.low = 1
            req.config.p4info.CopyFrom(p4info)
            req.config.p4_device_config = device_config_from_file(SPRAY)
            client.stub.SetForwardingPipelineConfig(req)

            table = next(t for t in p4info.tables if t.preamble.name == "SIngress.punt")
            action = next(x for x in p4info.actions if x.preamble.name == "SIngress.to_cpu")
            w = p4runtime_pb2.WriteRequest(device_id=5)
            w.election_id.low = 1
            u = w.updates.add(type=p4runtime_pb2.Update.INSERT)
            te = u.entity.table_entry
            te.table_id = table.preamble.id
            fm = te.match.add(field_id=table.match_fields[0].id)
            fm.exact.value = b"\x88\xb5"
            te.action.action.action_id = action.preamble.id
            te.action.action.params.add(param_id=action.params[0].id, value=bytes([CPU_PORT]))
            client.stub.Write(w)

            a.send(punt)
            pin = client.next("packet", timeout=5.0)
            assert pin.payload == punt
            # only one: the frame sent before the pipeline existed was dropped
            with pytest.raises(queue.Empty):
                client.next("packet", timeout=0.3)
            # an IPv6 frame hits the empty selector table: dropped, nothing comes back
            a.send(bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IPv6(src="fd00::1", dst="fd00::2") / UDP()))
            assert recv_frames(lab.socket("p4tb0"), timeout=0.5) == []
        finally:
            if client is not None:
                client.close()
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        assert p.returncode == 0, p.stderr.read()

