"""P4Runtime write and read rates of the embedded target's server, on loopback.

The server runs in its own process (as in ``p4target run``), the client here speaks
raw gRPC with finsy's generated stubs. Figures: table entries inserted per second
with batches of 1 and of 1,000 (target: >= 20,000/s batched), and entries read back
per second with one wildcard Read. Prints only; never asserts.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table mac { key = { hdr.eth.dst: exact; } actions = { fwd; NoAction; } size = 262144; }
    apply { mac.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def serve() -> None:
    """Child process: a Device with no ports and the P4Runtime server on an ephemeral port."""
    from p4target.device import Device
    from p4target.p4runtime.server import P4RuntimeServer

    server = P4RuntimeServer(Device(device_id=0), "127.0.0.1:0")
    server.start()
    print(server.bound_port, flush=True)
    sys.stdin.readline()
    server.stop()


def main() -> None:
    import grpc
    from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info

    with tempfile.TemporaryDirectory(prefix="p4t-bench-") as tmp:
        prog = Path(tmp) / "mac.p4"
        prog.write_text(PROGRAM)
        config = device_config_from_file(prog)
        p4info = build_p4info(load_device_config(config).model)
    child = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=REPO)
    try:
        port = int(child.stdout.readline())
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_metadata_size", 1 << 24)])
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        requests: list = []
        arb = p4runtime_pb2.StreamMessageRequest()
        arb.arbitration.device_id = 0
        arb.arbitration.election_id.low = 1
        import queue

        q: queue.Queue = queue.Queue()
        q.put(arb)
        stream = stub.StreamChannel(iter(q.get, None))
        next(stream)  # the arbitration answer
        set_req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        set_req.election_id.low = 1
        set_req.config.p4info.CopyFrom(p4info)
        set_req.config.p4_device_config = config
        stub.SetForwardingPipelineConfig(set_req)
        table = p4info.tables[0]
        fwd = next(a for a in p4info.actions if a.preamble.name.endswith("fwd"))

        def entry(i: int) -> p4runtime_pb2.Update:
            u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
            te = u.entity.table_entry
            te.table_id = table.preamble.id
            te.match.add(field_id=1).exact.value = (0x020000000000 + i).to_bytes(6, "big")
            te.action.action.action_id = fwd.preamble.id
            te.action.action.params.add(param_id=1, value=bytes([1 + i % 8]))
            return u

        def write(updates: list) -> None:
            req = p4runtime_pb2.WriteRequest(device_id=0, updates=updates)
            req.election_id.low = 1
            stub.Write(req)

        n1 = 3000
        singles = [entry(i) for i in range(n1)]
        t0 = time.perf_counter()
        for u in singles:
            write([u])
        dt1 = time.perf_counter() - t0
        print(f"p4runtime write, batch 1:     {n1 / dt1:10.0f} entries/s ({n1} entries, {dt1:.2f} s)")

        nb, size = 50, 1000
        batches = [[entry(n1 + b * size + i) for i in range(size)] for b in range(nb)]
        t0 = time.perf_counter()
        for batch in batches:
            write(batch)
        dtb = time.perf_counter() - t0
        rate = nb * size / dtb
        print(f"p4runtime write, batch 1000:  {rate:10.0f} entries/s ({nb * size} entries, {dtb:.2f} s)"
              f"  target >= 20000/s: {'met' if rate >= 20000 else 'NOT met'}")

        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = table.preamble.id
        t0 = time.perf_counter()
        total = sum(len(r.entities) for r in stub.Read(read))
        dtr = time.perf_counter() - t0
        print(f"p4runtime read-back:          {total / dtr:10.0f} entries/s ({total} entries, {dtr:.2f} s)")
        q.put(None)
        channel.close()
    finally:
        try:
            child.communicate("\n", timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        main()
