"""The workload agent: one process per host that runs every transfer of a job from
and to that host.

Why one process per host: a job of 16 hosts has up to 16 x 15 transfers at once; a
Python ``mrc-send`` per transfer would be hundreds of processes, each a second of
start-up on a busy 2-core machine. The agent runs the endpoints' own state machines
(``endpoints.transport``: a ``Receiver`` for everything that arrives, a ``Sender``
per transfer it sends) on its sockets, as ``endpoints/io.py`` drives one of them. The
A host's transfers to one destination are one connection's messages, as a
collective's are on a persistent RDMA connection: an EV ASSUMED_BAD when one
transfer ends starts the next one ASSUMED_BAD (probed, and GOOD again once its path
answers), so a dead path is found once, not once per message. The
MRC transports share one socket on the MRC port: answers (ACK, NACK, probe replies,
STATUS) go to the sender whose QP they name, everything else to the receiver. The
per-flow baseline gives each sender a socket on a source port of its own.

The runner (``runner.py``) talks to it over its standard input and output, one JSON
object per line. In: ``{"op": "send", "flow": ID, "dst": HOST, "to": ADDR, "size": N}``,
``{"op": "quit"}``. Out: ``ready``; ``start`` (flow, t, sha256); ``sent`` (flow, t,
ok, the sender's report's figures); ``recv`` (peer, t, opened, sha256, bytes,
verified); ``error`` (text). Times are ``time.monotonic()``: one clock for every
namespace of the machine.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from endpoints import io
from endpoints.cli import UsageError, pseudo_random, topology_evs
from endpoints.transport import ASSUMED_BAD, Receiver, ReceiverConfig, Sender, SenderConfig
from endpoints.wire import OP_ACK, OP_PROBE_REPLY, OP_STATUS, QP_MASK, STATE_VERIFIED
from fabric.plan import EvPath
from fabric.resolve import Shape, resolve
from fabric.topology import Topology
from workloads.transports import FLOW_PORT_BASE, Transport, transport

ANSWERS = frozenset({OP_ACK, OP_PROBE_REPLY, OP_STATUS})
CARRIED = "carried"  # the cause of an EV retired at a transfer's start: it was ASSUMED_BAD when the last one ended
FLOW_PORTS = (FLOW_PORT_BASE, 40000)  # per-flow source ports: first, how many
BURST = 256  # datagrams read from a socket before the others get their turn


@dataclass
class Options:
    host: str
    listen: str
    transport: Transport
    topo: Topology
    timeout: float = 60.0
    rto_min: float = SenderConfig.rto_min
    nack_delay: float = 0.005
    ack_delay: float = ReceiverConfig.ack_delay


@dataclass
class Flight:
    """One transfer this host sends."""

    flow: int
    dst: str
    sender: Sender
    sock: socket.socket
    tx: io.Transmitter
    to: tuple[str, int]
    deadline: float


@dataclass
class Agent:
    opts: Options
    out: Any = sys.stdout
    flights: dict[int, Flight] = field(default_factory=dict)  # by sender QP
    seen: int = 0  # receiver.completed entries reported
    bad: dict[str, set[int]] = field(default_factory=dict)  # per destination: EVs ASSUMED_BAD when a transfer ended
    stats: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = self.opts.transport
        self.receiver = Receiver(ReceiverConfig(max_connections=100_000, nack_delay=self.opts.nack_delay,
                                                 ack_delay=self.opts.ack_delay))
        self.sock = io.listen(self.opts.listen, t.port, want_tclass=True)
        self.rtx = io.Transmitter(self.sock)
        self.sockets: dict[int, socket.socket] = {self.sock.fileno(): self.sock}
        self.buf = bytearray(io.RECV_BUF)
        self.evs: dict[str, list[EvPath]] = {}

    def emit(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def _evs(self, dst: str) -> list[EvPath]:
        if self.opts.transport.per_flow:
            return [EvPath(1, -1, -1)]
        if dst not in self.evs:
            self.evs[dst] = topology_evs(self.opts.topo, self.opts.host, dst, None, None)[0]
        return self.evs[dst]

    def send(self, flow: int, dst: str, to: str, size: int, now: float, seed: int = 0) -> None:
        """Start sending flow ``flow``: ``size`` bytes drawn from the flow and ``seed``. An
        RTO floor above the default ceiling (links limited to a few packets/s, whose
        queues delay by seconds) raises the ceiling and the first RTO with it."""
        t = self.opts.transport
        cfg_seed = flow + (seed << 32)
        while True:
            cfg = SenderConfig(spray=t.spray, seed=cfg_seed, rto_min=self.opts.rto_min,
                               rto_initial=max(SenderConfig.rto_initial, self.opts.rto_min),
                               rto_max=max(SenderConfig.rto_max, 4 * self.opts.rto_min),
                               ev_min_active=1 if t.per_flow else SenderConfig.ev_min_active)
            sender = Sender(pseudo_random(flow + (seed << 32), size), self._evs(dst), cfg, now=now)
            if sender.qp not in self.flights:
                break
            cfg_seed += 1 << 20
        if t.per_flow:
            sock = self._flow_socket(t.source_port(flow))
            self.sockets[sock.fileno()] = sock
            tx = io.Transmitter(sock)
        else:
            sock, tx = self.sock, self.rtx
        for ev in sorted(self.bad.get(dst, ())):  # the connection's judgement, carried to its next message
            sender.ev_set.retire(ev, CARRIED, now)
        self.flights[sender.qp] = Flight(flow, dst, sender, sock, tx, (to, t.port), now + self.opts.timeout)
        self.emit(ev="start", flow=flow, t=now, sha256=sender.digest.hex())

    def _flow_socket(self, port: int) -> socket.socket:
        """A socket of the flow's own on ``port``, or the next free port (the last
        iteration's flow of the same number may still wait for its verdict there)."""
        for k in range(64):
            try:
                return io.listen(self.opts.listen, FLOW_PORTS[0] + (port - FLOW_PORTS[0] + k) % FLOW_PORTS[1],
                                 want_tclass=False)
            except io.IoError:
                continue
        return io.listen(self.opts.listen, 0, want_tclass=False)

    def _packet(self, sock: socket.socket, n: int, addr: Any, tclass: int, now: float) -> None:
        data = memoryview(self.buf)[:n]
        if n >= 8 and data[0] in ANSWERS:
            qp = int.from_bytes(data[4:8], "big") & QP_MASK
            f = self.flights.get(qp)
            if f is not None:
                f.sender.on_packet(data, now)
                return
            if sock is not self.sock:
                return  # a late answer to a finished per-flow sender
        ev = int.from_bytes(data[2:4], "big") if n >= 4 else 0
        out = self.receiver.on_packet(data, now, addr, ev, tclass)
        if out:
            self.rtx.send(out, None, self.stats)

    def read(self, sock: socket.socket, now: float) -> None:
        anc = socket.CMSG_SPACE(4)
        for _ in range(BURST):
            try:
                n, ancdata, _flags, addr = sock.recvmsg_into([self.buf], anc)
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionRefusedError:
                continue
            tclass = 0
            for level, kind, d in ancdata:
                if level == socket.IPPROTO_IPV6 and kind == socket.IPV6_TCLASS:
                    tclass = int.from_bytes(d[:4], sys.byteorder)
            self._packet(sock, n, addr, tclass, now)

    def poll(self, now: float) -> float:
        """Let every state machine send what is due; report what finished; the
        seconds until the next wake-up (at most 20 ms)."""
        wake = now + 0.02
        out = self.receiver.poll(now)
        if out:
            self.rtx.send(out, None, self.stats)
        for c in self.receiver.completed[self.seen:]:
            self.emit(ev="recv", t=c.completed_at, opened=c.opened_at, peer=str(c.peer[0]), sha256=c.digest.hex(),
                      bytes=c.length, verified=c.state == STATE_VERIFIED)
            c.buf = bytearray()  # every later packet of it is a duplicate: its bytes are not needed again
            c.view = memoryview(c.buf)
        self.seen = len(self.receiver.completed)
        w = self.receiver.next_wakeup()
        wake = min(wake, w) if w is not None else wake
        for qp, f in list(self.flights.items()):
            s = f.sender
            if not s.finished and now < f.deadline:
                pkts = s.poll(now)
                if pkts:
                    f.tx.send(pkts, f.to, self.stats)
                    wake = now
                w = s.next_wakeup()
                wake = min(wake, w) if w is not None else wake
            if s.finished or now >= f.deadline:
                self._finish(qp, f, now)
        return max(0.0, wake - time.monotonic())

    def _finish(self, qp: int, f: Flight, now: float) -> None:
        rep = f.sender.report()
        del self.flights[qp]
        if f.sock is not self.sock:
            del self.sockets[f.sock.fileno()]
            f.sock.close()
        events = rep.get("ev_events", [])
        retired = [e["ev"] for e in events if e.get("event") == "retired" and e.get("cause") != CARRIED]
        carried = [e["ev"] for e in events if e.get("event") == "retired" and e.get("cause") == CARRIED]
        recovered = [e["ev"] for e in events if e.get("event") in ("recovered", "restored")]
        self.bad[f.dst] = {ev for ev, st in f.sender.evs.items() if st.state == ASSUMED_BAD}
        self.emit(ev="sent", flow=f.flow, t=now, ok=bool(f.sender.ok and f.sender.finished),
                  error=rep.get("error"), retransmissions=rep["retransmissions"]["total"], evs_retired=retired,
                  evs_carried=carried, evs_recovered=recovered,
                  per_plane_packets=rep.get("per_plane_packets", {}), packets_sent=rep.get("packets_sent"))

    def command(self, line: str, now: float) -> bool:
        """Apply one command line; False on quit."""
        try:
            cmd = json.loads(line)
            if cmd["op"] == "quit":
                return False
            self.send(int(cmd["flow"]), str(cmd["dst"]), str(cmd["to"]), int(cmd["size"]), now, int(cmd.get("seed", 0)))
        except (ValueError, KeyError, TypeError, UsageError, io.IoError) as exc:
            self.emit(ev="error", text=f"{self.opts.host}: {line.strip()[:120]}: {exc}")
        return True


def serve(agent: Agent) -> None:
    """Run until ``quit`` or the end of the input."""
    stdin = sys.stdin.fileno()
    os.set_blocking(stdin, False)
    pending = b""
    agent.emit(ev="ready", host=agent.opts.host)
    while True:
        now = time.monotonic()
        for sock in list(agent.sockets.values()):
            agent.read(sock, now)
        wait = agent.poll(time.monotonic())
        readable, _, _ = select.select([stdin, *agent.sockets], [], [], wait)
        if stdin in readable:
            chunk = os.read(stdin, 65536)
            if not chunk:
                return
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip() and not agent.command(line.decode(), time.monotonic()):
                    return


def main(argv: list[str] | None = None) -> int:
    """``python -m workloads.agent HOST ADDR TRANSPORT TIMEOUT RTO_MIN NACK_DELAY ACK_DELAY SHAPE_JSON``
    (started by the runner, not by hand)."""
    args = sys.argv[1:] if argv is None else argv
    try:
        host, listen, name, timeout, rto, nack, ack, shape = args
        topo = resolve(None, Shape(**json.loads(shape))).topology
        opts = Options(host, listen, transport(name), topo, float(timeout), float(rto), float(nack), float(ack))
        agent = Agent(opts)
    except (ValueError, TypeError, io.IoError) as exc:
        print(json.dumps({"ev": "error", "text": f"agent {' '.join(args)[:200]}: {exc}"}), flush=True)
        return 2
    serve(agent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
