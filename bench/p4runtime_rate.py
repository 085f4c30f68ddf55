"""P4Runtime write and read rates of the embedded target's server, on loopback.

Each server runs in its own process; the client here speaks raw gRPC with finsy's
generated messages and sends requests serialised before the clock starts (so the
figures are the server's, not the client's message building). One run measures:

- the embedded target (``P4RuntimeServer`` in a child Python process), its threads
  placed as ``p4target run`` places them by default (``--cpu auto``: all on one CPU
  chosen by the device id), and the same server with its threads left to the kernel
  (``--cpu any``, the placement before the batch-1 work) for comparison;
- real BMv2 ``simple_switch_grpc``, when it and ``p4c-bm2-ss`` are on the PATH (same
  program, same request bytes apart from the ids of the P4Info each side uses);
- a no-op server answering Write at once on the embedded server's own transport
  (``h2_server.H2Server``, Write answered on its loop thread): the floor of batch-1
  writes with this client on this machine, once with its threads left to the kernel
  and once kept on the embedded server's CPU; the same no-op on the standard
  ``grpc.server`` (a pool thread per call), the server's fallback.

The client (this process) is never pinned: the kernel places it, as it would place a
controller.

Figures: entries inserted per second in batches of 1 and of 1,000, entries read back
per second with one wildcard Read (best and worst of several rounds), and the peak
RSS of each server process after 1,000,000 exact entries installed over P4Runtime
(and read back once, so what a read keeps is counted).
They are printed against the reference figures (BMv2 measured on the project machine)
and, with BMv2 present, as ratios of the same run. Prints only; never asserts.
"""

from __future__ import annotations

import argparse
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The mac table is the one the reference BMv2 figures were measured with; mac_big only
# holds the 1,000,000 entries of the memory figure (same key and actions).
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
    table mac_big { key = { hdr.eth.dst: exact; } actions = { fwd; NoAction; } size = 1048576; }
    apply { mac.apply(); mac_big.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

# BMv2 simple_switch_grpc measured on the project machine, entries/s.
REFERENCE = {"batch1": 3_400, "batch1000": 147_000, "read": 371_000}
# What the embedded target must reach.
TARGET = {"batch1": 4_000, "batch1000": 150_000, "read": 400_000}
MEMORY_TARGET_MB = 1024

ROUNDS = 5
SINGLES_PER_ROUND = 600
BATCHES_PER_ROUND = 10
BATCH = 1000
BIG_ENTRIES = 1_000_000


# ---- servers ---------------------------------------------------------------------------


@dataclass
class Server:
    """A P4Runtime server process the client talks to."""

    name: str
    port: int
    proc: subprocess.Popen
    p4info: object = None  # p4info_pb2.P4Info the client uses for ids
    device_config: bytes = b""
    stop: Callable[[], None] = lambda: None
    cpu: int | None = None  # the CPU all its threads are kept on; None: the kernel places them

    def peak_rss_mb(self) -> float | None:
        """VmHWM of the server process (peak resident set), from /proc."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None


def serve_embedded(cpu: str) -> None:
    """Child process: a Device with no ports and the P4Runtime server on an ephemeral
    port, its threads placed by ``cpu`` (as ``p4target run --cpu``); prints the port
    and the CPU (-1: not pinned)."""
    from p4target.device import Device
    from p4target.p4runtime.placement import parse_cpu
    from p4target.p4runtime.server import P4RuntimeServer

    server = P4RuntimeServer(Device(device_id=0), "127.0.0.1:0", cpu=parse_cpu(cpu))
    server.start()
    print(server.bound_port, -1 if server.cpu is None else server.cpu, flush=True)
    sys.stdin.readline()
    server.stop()


def serve_noop(cpu: str, transport: str) -> None:
    """Child process: a gRPC server whose Write does nothing, on ``transport`` ("h2":
    the embedded server's ``H2Server``, Write inline as there; "grpc": ``grpc.server``), its threads on
    CPU ``cpu`` (all of them, as the embedded server's) or, for -1, left to the kernel."""
    from concurrent import futures

    import grpc
    from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    from p4target.accel.h2_server import H2Server
    from p4target.p4runtime.placement import pin_process
    from p4target.p4runtime.transports import INLINE_METHODS

    if int(cpu) >= 0:
        pin_process(int(cpu))

    class NoOp(p4runtime_pb2_grpc.P4RuntimeServicer):
        def Write(self, request, context):
            return p4runtime_pb2.WriteResponse()

    if transport == "h2":
        server = H2Server(4, inline=INLINE_METHODS)
    else:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(NoOp(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, cpu, flush=True)
    sys.stdin.readline()
    server.stop(0.5)


def _python_child(flag: str, *args: str) -> tuple[subprocess.Popen, int, int | None]:
    """A server child; its port and the CPU its threads are on (None: not pinned)."""
    child = subprocess.Popen([sys.executable, __file__, flag, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=REPO)
    words = child.stdout.readline().split()
    if len(words) != 2 or not all(w.lstrip("-").isdigit() for w in words):
        child.kill()
        raise RuntimeError(f"server child {flag} {' '.join(args)} did not start (said {' '.join(words)!r})")
    port, pinned = map(int, words)
    return child, port, None if pinned < 0 else pinned


def _stop_python_child(child: subprocess.Popen) -> None:
    try:
        child.communicate("\n", timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        child.kill()
        child.wait()


def start_embedded(tmp: Path, cpu: str, name: str = "embedded") -> Server:
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info

    prog = tmp / "mac.p4"
    prog.write_text(PROGRAM)
    config = device_config_from_file(prog)
    p4info = build_p4info(load_device_config(config).model)
    child, port, pinned = _python_child("--serve", cpu)
    return Server(name, port, child, p4info, config, lambda: _stop_python_child(child), pinned)


def placement(cpu: int | None) -> str:
    return "threads not pinned" if cpu is None else f"all threads on CPU {cpu}"


def bmv2_missing() -> str | None:
    """Why BMv2 cannot be measured here, or None when it can."""
    missing = [tool for tool in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not on the PATH"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_bmv2(tmp: Path) -> Server:
    """Compile the program with p4c-bm2-ss and start simple_switch_grpc without a pipeline."""
    import grpc
    from finsy.proto.p4.config.v1 import p4info_pb2
    from google.protobuf import text_format

    from p4target.device_config import bmv2_device_config

    prog = tmp / "mac.p4"
    prog.write_text(PROGRAM)
    out_json, out_info = tmp / "mac.json", tmp / "mac.p4info.txt"
    done = subprocess.run(["p4c-bm2-ss", "--p4runtime-files", str(out_info), "-o", str(out_json), str(prog)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"p4c-bm2-ss failed: {(done.stderr or done.stdout).strip()[:500]}")
    p4info = text_format.Parse(out_info.read_text(), p4info_pb2.P4Info())
    port, thrift_port = _free_port(), _free_port()  # thrift: not the default 9090 another switch may hold
    log = open(tmp / "bmv2.log", "w")
    proc = subprocess.Popen(["simple_switch_grpc", "--device-id", "0", "--no-p4", "--log-level", "error",
                             "--thrift-port", str(thrift_port), "--", "--grpc-server-addr", f"127.0.0.1:{port}"],
                            stdout=log, stderr=subprocess.STDOUT)

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=20)
    except grpc.FutureTimeoutError:
        stop()
        raise RuntimeError(f"simple_switch_grpc did not listen on port {port}; see {tmp / 'bmv2.log'}") from None
    finally:
        channel.close()
    return Server("bmv2", port, proc, p4info, bmv2_device_config(out_json), stop)


# ---- client ------------------------------------------------------------------------------


@dataclass
class Client:
    """Primary client of one server: raw bytes in, raw bytes out (no client-side (de)serialising in the timing)."""

    server: Server
    channel: object = None
    outbox: queue.Queue = field(default_factory=queue.Queue)

    def connect(self) -> None:
        import grpc
        from finsy.proto.p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.server.port}",
                                             options=[("grpc.max_metadata_size", 1 << 24),
                                                      ("grpc.max_receive_message_length", 1 << 28),
                                                      ("grpc.max_send_message_length", 1 << 28)])
        stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        arb = p4runtime_pb2.StreamMessageRequest()
        arb.arbitration.device_id = 0
        arb.arbitration.election_id.low = 1
        self.outbox.put(arb)
        self.stream = stub.StreamChannel(iter(self.outbox.get, None))
        next(self.stream)  # the arbitration answer
        self._write = self.channel.unary_unary("/p4.v1.P4Runtime/Write")
        self._read = self.channel.unary_stream("/p4.v1.P4Runtime/Read")
        self.stub = stub

    def push_pipeline(self) -> None:
        from finsy.proto.p4.v1 import p4runtime_pb2

        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(self.server.p4info)
        req.config.p4_device_config = self.server.device_config
        self.stub.SetForwardingPipelineConfig(req)

    def write(self, data: bytes) -> None:
        self._write(data)

    def read(self, data: bytes) -> list[bytes]:
        return list(self._read(data))

    def close(self) -> None:
        self.outbox.put(None)
        self.channel.close()


class Requests:
    """Serialised requests for one P4Info (ids come from the side's own P4Info)."""

    def __init__(self, p4info) -> None:
        from finsy.proto.p4.v1 import p4runtime_pb2

        self.pb = p4runtime_pb2
        tables = {t.preamble.name.split(".")[-1]: t.preamble.id for t in p4info.tables}
        self.mac, self.mac_big = tables["mac"], tables["mac_big"]
        self.fwd = next(a.preamble.id for a in p4info.actions if a.preamble.name.split(".")[-1] == "fwd")

    def _update(self, table_id: int, i: int):
        pb = self.pb
        u = pb.Update(type=pb.Update.INSERT)
        te = u.entity.table_entry
        te.table_id = table_id
        te.match.add(field_id=1).exact.value = (0x020000000000 + i).to_bytes(6, "big")
        te.action.action.action_id = self.fwd
        te.action.action.params.add(param_id=1, value=bytes([1 + i % 8]))
        return u

    def write(self, table_id: int, first: int, count: int) -> bytes:
        req = self.pb.WriteRequest(device_id=0, updates=[self._update(table_id, first + i) for i in range(count)])
        req.election_id.low = 1
        return req.SerializeToString()

    def read_all(self, table_id: int) -> bytes:
        req = self.pb.ReadRequest(device_id=0)
        req.entities.add().table_entry.table_id = table_id
        return req.SerializeToString()

    def count(self, responses: list[bytes]) -> int:
        return sum(len(self.pb.ReadResponse.FromString(r).entities) for r in responses)


# ---- measurements ------------------------------------------------------------------------


@dataclass
class Figures:
    batch1: list[float] = field(default_factory=list)
    latency_us: list[float] = field(default_factory=list)  # each single-entry Write, as the client saw it
    batch1000: list[float] = field(default_factory=list)
    read: list[float] = field(default_factory=list)
    read_entries: int = 0
    client_parse_us: float = 0.0  # client-side parse cost per read entity (not in the rate)
    big_rate: float = 0.0
    big_read_rate: float = 0.0
    rss_mb: float | None = None


class Side:
    """One server under measurement: its client, request builder, figures, entries written."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.client = Client(server)
        self.client.connect()
        self.client.push_pipeline()
        self.requests = Requests(server.p4info)
        self.figures = Figures()
        self.written = 0

    def singles(self) -> None:
        r = self.requests
        data = [r.write(r.mac, self.written + i, 1) for i in range(SINGLES_PER_ROUND)]
        self.written += SINGLES_PER_ROUND
        self.figures.batch1.append(_rate(self.client.write, data, SINGLES_PER_ROUND, self.figures.latency_us))

    def batches(self) -> None:
        r = self.requests
        data = [r.write(r.mac, self.written + b * BATCH, BATCH) for b in range(BATCHES_PER_ROUND)]
        self.written += BATCHES_PER_ROUND * BATCH
        self.figures.batch1000.append(_rate(self.client.write, data, BATCHES_PER_ROUND * BATCH))

    def read(self) -> None:
        r, f = self.requests, self.figures
        t0 = time.perf_counter()
        responses = self.client.read(r.read_all(r.mac))
        dt = time.perf_counter() - t0
        t1 = time.perf_counter()
        f.read_entries = r.count(responses)
        f.client_parse_us = (time.perf_counter() - t1) / max(f.read_entries, 1) * 1e6
        f.read.append(f.read_entries / dt)
        if f.read_entries != self.written:
            print(f"  warning: {self.server.name} read back {f.read_entries} entries, {self.written} were written")

    def memory(self) -> None:
        """1,000,000 entries into mac_big, one wildcard read of them, then the peak RSS."""
        c, r, f = self.client, self.requests, self.figures
        done, t0, spent = 0, time.perf_counter(), 0.0
        while done < BIG_ENTRIES:
            chunk = [r.write(r.mac_big, done + b * BATCH, BATCH) for b in range(50)]
            t1 = time.perf_counter()
            for data in chunk:
                c.write(data)
            spent += time.perf_counter() - t1
            done += 50 * BATCH
        f.big_rate = done / spent
        t1 = time.perf_counter()
        responses = c.read(r.read_all(r.mac_big))
        f.big_read_rate = BIG_ENTRIES / (time.perf_counter() - t1)
        got = r.count(responses)
        del responses
        f.rss_mb = self.server.peak_rss_mb()
        print(f"  {self.server.name}: {BIG_ENTRIES} entries into mac_big in {time.perf_counter() - t0:.1f} s "
              f"(writes alone {spent:.1f} s), read back {got} of them at {f.big_read_rate:.0f}/s")

    def close(self) -> None:
        self.client.close()


def _rate(call: Callable[[bytes], object], data: list[bytes], entries: int,
          latencies_us: list[float] | None = None) -> float:
    """Entries per second over the calls; each call's time appended to ``latencies_us``."""
    clock = time.perf_counter
    t0 = clock()
    if latencies_us is None:
        for d in data:
            call(d)
    else:
        add = latencies_us.append
        for d in data:
            t = clock()
            call(d)
            add((clock() - t) * 1e6)
    return entries / (time.perf_counter() - t0)


class Floor:
    """A no-op gRPC server answering Write: what batch-1 costs without any work, on the
    embedded server's transport ("h2") or on ``grpc.server`` ("grpc")."""

    LABELS = {"h2": "the embedded server's transport (its floor)",
              "grpc": "grpc.server (the standard Python server)"}

    def __init__(self, cpu: int | None, transport: str = "h2") -> None:
        import grpc
        from finsy.proto.p4.v1 import p4runtime_pb2

        self.transport = transport
        self.child, port, self.cpu = _python_child("--serve-noop", str(-1 if cpu is None else cpu), transport)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.write = self.channel.unary_unary("/p4.v1.P4Runtime/Write")
        req = p4runtime_pb2.WriteRequest(device_id=0)
        req.election_id.low = 1
        self.request = req.SerializeToString()
        self.rates: list[float] = []

    def singles(self) -> None:
        self.rates.append(_rate(self.write, [self.request] * SINGLES_PER_ROUND, SINGLES_PER_ROUND))

    def close(self) -> None:
        self.channel.close()
        _stop_python_child(self.child)


def measure(sides: list[Side], floors: list[Floor], memory: list[Side]) -> None:
    """Every figure in rounds that alternate between the servers, so that the load of
    the machine at any moment weighs on all of them alike."""
    for side in sides:  # warm-up: connections, threads, first-call costs
        side.client.write(side.requests.write(side.requests.mac, 10_000_000, 1))
        side.written += 1
    for _ in range(ROUNDS):
        for floor in floors:
            floor.singles()
        for side in sides:
            side.singles()
        for side in sides:
            side.batches()
    for _ in range(ROUNDS):
        for side in sides:
            side.read()
    for side in memory:
        side.memory()


def _span(rates: list[float]) -> str:
    return f"{max(rates):9.0f} /s (worst {min(rates):7.0f})"


def report(f: Figures, bmv2: Figures | None, floors: list[Floor], cpu: int | None, choice: str,
           unpinned: Figures | None) -> None:
    rows = [("write, batch 1", "batch1"), ("write, batch 1000", "batch1000"), ("wildcard read", "read")]
    print(f"entries/s, best of {ROUNDS} rounds (worst in brackets; the first read is the worst: it "
          "encodes); reference = BMv2 measured on the project machine")
    default = ", p4target run's default, for device 0" if choice == "auto" else ""
    print(f"placement: embedded server {placement(cpu)} (--cpu {choice}{default}); "
          "the client (this process) and BMv2 not pinned")
    for label, key in rows:
        mine = getattr(f, key)
        line = (f"  {label:18} embedded {_span(mine)}  target {TARGET[key]:7d}: "
                f"{'met' if max(mine) >= TARGET[key] else 'NOT met'};  vs reference {max(mine) / REFERENCE[key]:4.2f}x")
        if bmv2 is not None:
            theirs = getattr(bmv2, key)
            line += f";  bmv2 here {_span(theirs)} -> {max(mine) / max(theirs):4.2f}x"
        print(line)
    if unpinned is not None:
        print("  the same server with its threads not pinned (--cpu any), same rounds:")
        for label, key in rows:
            theirs = getattr(unpinned, key)
            print(f"  {label:18} any CPU  {_span(theirs)}  -> pinned/not pinned {max(getattr(f, key)) / max(theirs):4.2f}x")
    if f.latency_us:
        lat = sorted(f.latency_us)
        print(f"  write, batch 1 latency (embedded, as the client sees each call): median {lat[len(lat) // 2]:.0f} us, "
              f"p99 {lat[int(len(lat) * 0.99)]:.0f} us, max {lat[-1]:.0f} us over {len(lat)} calls")
    for floor in floors:
        ratio = f"; embedded/floor {max(f.batch1) / max(floor.rates):4.2f}x" if floor.transport == "h2" else ""
        print(f"  write, batch 1 against a no-op on {Floor.LABELS[floor.transport]}, {placement(floor.cpu)}: "
              f"{_span(floor.rates)}{ratio}")
    print(f"  read of {f.read_entries} entries; client-side parsing (not in the rate): {f.client_parse_us:.2f} us/entry")
    for name, fig in (("embedded", f), ("bmv2", bmv2)):
        if fig is not None and fig.rss_mb is not None:
            verdict = "met" if fig.rss_mb < MEMORY_TARGET_MB else "NOT met"
            target = f" (target < {MEMORY_TARGET_MB} MB: {verdict})" if name == "embedded" else ""
            print(f"  {name}: peak RSS {fig.rss_mb:.0f} MB with {BIG_ENTRIES + fig.read_entries} entries installed"
                  f"{target}; 1,000-entry writes into the big table {fig.big_rate:.0f}/s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-memory", action="store_true", help="skip the 1,000,000-entry memory figure")
    ap.add_argument("--no-bmv2", action="store_true", help="do not measure BMv2 even when it is installed")
    ap.add_argument("--server-cpu", default="auto", metavar="CPU",
                    help="placement of the embedded server's threads, as p4target run --cpu "
                    "(auto: one CPU chosen by the device id; any: not pinned; N: CPU N); default auto")
    args = ap.parse_args()
    from p4target.p4runtime.placement import parse_cpu, resolve_cpu

    try:
        resolve_cpu(parse_cpu(args.server_cpu), 0)  # what the child will do, refused here in one line
    except ValueError as exc:  # PlacementError is one
        ap.error(f"--server-cpu: {exc}")
    with tempfile.TemporaryDirectory(prefix="p4t-bench-") as tmp_name:
        tmp = Path(tmp_name)
        servers = [start_embedded(tmp, args.server_cpu)]
        cpu = servers[0].cpu
        print(f"embedded target: server pid {servers[0].proc.pid}, port {servers[0].port}, {placement(cpu)}")
        reason = "--no-bmv2 given" if args.no_bmv2 else bmv2_missing()
        sides: list[Side] = []
        floors: list[Floor] = []
        unpinned: Side | None = None
        try:
            if reason is None:
                (tmp / "bmv2").mkdir()
                try:
                    servers.append(start_bmv2(tmp / "bmv2"))
                    print(f"bmv2 simple_switch_grpc: pid {servers[1].proc.pid}, port {servers[1].port}")
                except (RuntimeError, OSError) as exc:
                    reason = f"could not start it: {exc}"
            if reason is not None:
                print(f"bmv2: not measured ({reason}); ratios are against the reference figures only")
            floors = [Floor(None)] + ([Floor(cpu)] if cpu is not None else []) + [Floor(None, "grpc")]
            sides = [Side(s) for s in servers]
            memory = [] if args.no_memory else list(sides)
            if cpu is not None:  # the comparison: the same server, threads left to the kernel
                (tmp / "any").mkdir()
                servers.append(start_embedded(tmp / "any", "any", "embedded, not pinned"))
                unpinned = Side(servers[-1])
                sides.append(unpinned)
            measure(sides, floors, memory)
            bmv2 = next((s.figures for s in sides if s.server.name == "bmv2"), None)
            report(sides[0].figures, bmv2, floors, cpu, args.server_cpu.strip().lower(),
                   unpinned.figures if unpinned is not None else None)
        finally:
            for side in sides:
                side.close()
            for floor in floors:
                floor.close()
            for server in servers:
                server.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"] and len(sys.argv) == 3:
        serve_embedded(sys.argv[2])
    elif sys.argv[1:2] == ["--serve-noop"] and len(sys.argv) == 4:
        serve_noop(sys.argv[2], sys.argv[3])
    else:
        main()
