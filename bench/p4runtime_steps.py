"""CPU cost per entry of each step of the P4Runtime server's write and read paths.

In-process, no gRPC transport: a batch of 20,000 exact entries of the ``mac`` table of
bench/p4runtime_rate.py, each step being the function that does it, timed alone with
``time.thread_time`` (CPU time of this thread, so the load of a shared machine moves
it less than wall time). What docs/p4runtime.md's per-step table is made of. Prints
only; never asserts.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

N = 20_000
REPEATS = 7


def main() -> None:
    from finsy.proto.p4.v1 import p4runtime_pb2 as pb
    from p4runtime_rate import PROGRAM, Requests

    from p4target.device import Device
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info
    from p4target.p4runtime import translate, write
    from p4target.p4runtime.server import P4RuntimeServer

    with tempfile.TemporaryDirectory(prefix="p4t-steps-") as tmp:
        prog = Path(tmp) / "mac.p4"
        prog.write_text(PROGRAM)
        config = device_config_from_file(prog)
    p4info = build_p4info(load_device_config(config).model)
    server = P4RuntimeServer(Device(device_id=0), "127.0.0.1:0")  # never started: no gRPC
    push = pb.ForwardingPipelineConfig(p4info=p4info, p4_device_config=config)
    server.set_pipeline(pb.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, push)
    schema = server.state.schema
    if server.write_path == "compiled":  # the steps as the server runs them: the compiled copies
        from p4target.accel import write_path

        translate = write_path.load_compiled(write_path.TRANSLATE, asked=True) or translate
        write = write_path.load_compiled(write_path.WRITE, asked=True) or write
    print(f"write path: {server.write_path}")
    _check_direct_fields = write._check_direct_fields
    requests = Requests(p4info)
    t = schema.tables[requests.mac]
    table = server.device.switch.tables[t.name]
    data = requests.write(requests.mac, 0, N)

    def step(label: str, fn: Callable[[], object], setup: Callable[[], object] | None = None) -> None:
        spent = []
        for _ in range(REPEATS):
            if setup is not None:
                setup()
            t0 = time.thread_time()
            fn()
            spent.append(time.thread_time() - t0)
        print(f"  {label:62} {min(spent) / N * 1e6:5.2f} us/entry (median {statistics.median(spent) / N * 1e6:.2f})")

    print(f"P4Runtime server steps, CPU per entry, best of {REPEATS} over {N} exact entries")
    step("parse the WriteRequest (upb; gRPC's deserialiser)", lambda: pb.WriteRequest.FromString(data))
    request = pb.WriteRequest.FromString(data)
    entries = [u.entity.table_entry for u in request.updates]
    step("reach each update's TableEntry", lambda: [u.entity.table_entry for u in request.updates])
    step("direct-resource and idle-timeout checks, priority",
         lambda: [(_check_direct_fields(t, e), translate.decode_priority(t, e.priority)) for e in entries])
    step("decode_key: match -> runtime key, every check", lambda: [translate.decode_key(t, e.match) for e in entries])
    step("table_args: action -> argument tuple, every check",
         lambda: [translate.table_args(schema, t, e.action.action, False) for e in entries])
    keys = [translate.decode_key(t, e.match) for e in entries]
    actions = [translate.table_args(schema, t, e.action.action, False) for e in entries]

    def store() -> None:
        for key, (info, args) in zip(keys, actions, strict=False):
            table.add_checked(key, None, info.name, args)

    step("TableRuntime.add_checked: duplicate, full, action; store", store, setup=table.clear)
    step("server.write of the batch, whole (locks, dispatch, the above)",
         lambda: server.write(request.updates), setup=table.clear)
    modify, delete = pb.WriteRequest.FromString(data), pb.WriteRequest.FromString(data)
    for u in modify.updates:
        u.type = pb.Update.MODIFY
    for u in delete.updates:
        u.type = pb.Update.DELETE

    def refill() -> None:
        table.clear()
        server.write(request.updates)

    step("the same batch as MODIFY, whole", lambda: server.write(modify.updates), setup=refill)
    step("the same batch as DELETE, whole", lambda: server.write(delete.updates), setup=refill)
    refill()
    read = pb.ReadRequest.FromString(requests.read_all(requests.mac))

    def forget_encodings() -> None:
        for stored in table.records():
            stored.wire = None

    step("first wildcard read: encode each entry and keep it", lambda: server.read(read.entities),
         setup=forget_encodings)
    step("later wildcard reads: gather the kept encodings", lambda: server.read(read.entities))
    found, _ = server.read(read.entities)
    step("ReadResponses of 1,000 entities: join + upb parse", lambda: list(server.chunks(found)))
    responses = list(server.chunks(found))
    step("ReadResponse serialisation (gRPC's serialiser)", lambda: [r.SerializeToString() for r in responses])


if __name__ == "__main__":
    main()
