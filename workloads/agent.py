"""The workload agent: one process per host that runs every transfer of a job from
and to that host.

Why one process per host: a job of 16 hosts has up to 16 x 15 transfers at once; a
Python ``mrc-send`` per transfer would be hundreds of processes, each a second of
start-up on a busy 2-core machine. The agent runs the endpoints' own state machines
(``endpoints.transport``: a ``Receiver`` for everything that arrives, a ``Sender``
per transfer it sends; on the RoCE baseline ``RoceReceiver`` and a ``RoceSender`` per
queue pair, ``roce_flows.py``) on its sockets, as ``endpoints/io.py`` drives one of them.
A host's transfers to one destination are one connection's messages, as a
collective's are on a persistent RDMA connection: an EV ASSUMED_BAD when one
transfer ends starts the next one ASSUMED_BAD (probed, and GOOD again once its path
answers), so a dead path is found once, not once per message. The
MRC transports share one socket on the MRC port: answers (ACK, NACK, probe replies,
STATUS) go to the sender whose QP they name, everything else to the receiver. The
per-flow baseline and the RoCE baseline give each sender a socket on a source port of
its own (a QP's answers come back to it).

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
from itertools import islice
from typing import Any

from endpoints import io
from endpoints.cli import UsageError, pseudo_random, topology_evs
from endpoints.ecmp import EPHEMERAL_FIRST, PORT_LAST
from endpoints.roce_cli import QpPath
from endpoints.roce_receiver import RoceReceiver
from endpoints.roce_sender import RoceSender
from endpoints.transport import ASSUMED_BAD, Connection, Receiver, ReceiverConfig, Sender, SenderConfig
from endpoints.wire import OP_ACK, OP_PROBE_REPLY, OP_STATUS, QP_MASK, STATE_VERIFIED
from fabric.plan import EvPath
from fabric.resolve import Shape, resolve
from fabric.topology import Topology
from workloads import roce_flows
from workloads.transports import FLOW_PORT_BASE, Transport, transport

ANSWERS = frozenset({OP_ACK, OP_PROBE_REPLY, OP_STATUS})
CARRIED = "carried"  # the cause of an EV retired at a transfer's start: it was ASSUMED_BAD when the last one ended
FLOW_PORTS = (FLOW_PORT_BASE, 40000)  # per-flow source ports: first, how many
QP_PORTS = (EPHEMERAL_FIRST, PORT_LAST + 1 - EPHEMERAL_FIRST)  # RoCE QPs' source ports: the dynamic range
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


def sender_config(t: Transport, seed: int, rto_min: float) -> SenderConfig:
    """An MRC-lite sender's configuration in a job: ``t``'s spraying, the RTO floor
    ``rto_min``. A floor above the default ceiling (links limited to a few packets/s,
    whose queues delay by seconds) raises the ceiling and the first RTO with it."""
    return SenderConfig(spray=t.spray, seed=seed, rto_min=rto_min, rto_initial=max(SenderConfig.rto_initial, rto_min),
                        rto_max=max(SenderConfig.rto_max, 4 * rto_min),
                        ev_min_active=1 if t.per_flow else SenderConfig.ev_min_active)


@dataclass
class Flight:
    """One transfer this host sends."""

    flow: int
    dst: str
    sender: Sender | RoceSender
    sock: socket.socket
    tx: io.Transmitter
    to: tuple[str, int]
    deadline: float
    qp_path: QpPath | None = None  # a RoCE QP's 4-tuple and EV


@dataclass
class Agent:
    opts: Options
    out: Any = sys.stdout
    flights: dict[int, Flight] = field(default_factory=dict)  # by sender QP
    seen: int = 0  # receiver.completed entries reported
    bad: dict[str, set[int]] = field(default_factory=dict)  # per destination: EVs ASSUMED_BAD when a transfer ended
    reorder: dict[str, float] = field(default_factory=dict)  # per peer address: the reordering window learned
    known: int = 0  # receiver connections given their peer's window
    stats: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = self.opts.transport
        self.receiver: Receiver | RoceReceiver = roce_flows.receiver() if t.roce else Receiver(ReceiverConfig(
            max_connections=100_000, nack_delay=self.opts.nack_delay, ack_delay=self.opts.ack_delay))
        self.sock = io.listen(self.opts.listen, t.port, want_tclass=True, dscp=roce_flows.DSCP if t.roce else 0)
        self.rtx = io.Transmitter(self.sock)
        self.sockets: dict[int, socket.socket] = {self.sock.fileno(): self.sock}
        self.own: dict[int, Flight] = {}  # a flight's own socket -> the flight
        self.buf = bytearray(io.RECV_BUF)
        self.evs: dict[str, tuple[list[EvPath], dict[int, str]]] = {}

    def emit(self, **event: Any) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def _evs(self, dst: str) -> tuple[list[EvPath], dict[int, str]]:
        """The EVs towards ``dst`` (the plan's, in its order) and their paths' names."""
        if self.opts.transport.per_flow and not self.opts.transport.roce:
            return [EvPath(1, -1, -1)], {}
        if dst not in self.evs:
            self.evs[dst] = topology_evs(self.opts.topo, self.opts.host, dst, None, None)
        return self.evs[dst]

    def send(self, flow: int, dst: str, to: str, size: int, now: float, seed: int = 0) -> None:
        """Start sending flow ``flow``: ``size`` bytes drawn from the flow and ``seed``."""
        t = self.opts.transport
        data = pseudo_random(flow + (seed << 32), size)
        f = (self._roce_flight if t.roce else self._mrc_flight)(flow, dst, to, data, now, seed)
        self.flights[f.sender.qp] = f
        if f.sock is not self.sock:
            self.sockets[f.sock.fileno()] = f.sock
            self.own[f.sock.fileno()] = f
        self.emit(ev="start", flow=flow, t=now, sha256=f.sender.digest.hex())

    def _mrc_flight(self, flow: int, dst: str, to: str, data: bytearray, now: float, seed: int) -> Flight:
        """An MRC-lite sender (``sender_config``), starting with the EVs the connection
        holds ASSUMED_BAD retired."""
        t = self.opts.transport
        cfg_seed = flow + (seed << 32)
        while True:
            sender = Sender(data, self._evs(dst)[0], sender_config(t, cfg_seed, self.opts.rto_min), now=now)
            if sender.qp not in self.flights:
                break
            cfg_seed += 1 << 20
        if t.per_flow:
            sock = self._flow_socket(t.source_port(flow))
            tx = io.Transmitter(sock)
        else:
            sock, tx = self.sock, self.rtx
        for ev in sorted(self._judged_bad(dst)):  # the connection's judgement, carried to its next message
            sender.ev_set.retire(ev, CARRIED, now)
        return Flight(flow, dst, sender, sock, tx, (to, t.port), now + self.opts.timeout)

    def _judged_bad(self, dst: str) -> set[int]:
        """The EVs towards ``dst`` the connection holds ASSUMED_BAD: as the last transfer
        to end left them, and as the transfers still running judge them now (a ring's
        next message starts when the last one arrived, before its sender has its
        verdict: what that sender found must not be found again)."""
        bad = set(self.bad.get(dst, ()))
        for f in self.flights.values():
            if f.dst == dst and isinstance(f.sender, Sender):
                bad |= {ev for ev, st in f.sender.evs.items() if st.state == ASSUMED_BAD}
        return bad

    def _roce_flight(self, flow: int, dst: str, to: str, data: bytearray, now: float, seed: int) -> Flight:
        """A RoCE QP on a source port of its own, on the EV its 4-tuple hashes onto."""
        t = self.opts.transport
        sock = self._flow_socket(t.source_port(flow, seed), QP_PORTS, roce_flows.DSCP)
        evs, names = self._evs(dst)
        cfg_seed = flow + (seed << 32)
        while True:
            sender, path = roce_flows.sender(data, evs, names, src=self.opts.listen, dst=to,
                                             sport=int(sock.getsockname()[1]), dport=t.port, seed=cfg_seed,
                                             ack_timeout=self.opts.rto_min, now=now)
            if sender.qp not in self.flights:
                break
            cfg_seed += 1 << 20
        return Flight(flow, dst, sender, sock, io.Transmitter(sock), (to, t.port), now + self.opts.timeout, path)

    def _flow_socket(self, port: int, ports: tuple[int, int] = FLOW_PORTS, dscp: int = 0) -> socket.socket:
        """A socket of the flow's own on ``port``, or the next free port of ``ports``
        (first, how many): the last iteration's flow of the same number may still
        wait for its verdict there."""
        first, n = ports
        for k in range(64):
            try:
                return io.listen(self.opts.listen, first + (port - first + k) % n, want_tclass=False, dscp=dscp)
            except io.IoError:
                continue
        return io.listen(self.opts.listen, 0, want_tclass=False, dscp=dscp)

    def _packet(self, sock: socket.socket, n: int, addr: Any, tclass: int, now: float) -> None:
        data = memoryview(self.buf)[:n]
        if sock is not self.sock:  # a flight's own socket: its answers (none once it has ended)
            own = self.own.get(sock.fileno())
            if own is not None:
                own.sender.on_packet(data, now)
            return
        if n >= 8 and data[0] in ANSWERS:
            qp = int.from_bytes(data[4:8], "big") & QP_MASK
            f = self.flights.get(qp)
            if f is not None:
                f.sender.on_packet(data, now)
                return
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
        if isinstance(self.receiver, Receiver):
            self._carry_reordering(self.receiver)
        out = self.receiver.poll(now)
        if out:
            self.rtx.send(out, None, self.stats)
        for c in self.receiver.completed[self.seen:]:
            self.emit(ev="recv", t=c.completed_at, opened=c.opened_at, peer=str(c.peer[0]), peer_port=int(c.peer[1]),
                      sha256=c.digest.hex(),
                      bytes=c.length, verified=c.state == STATE_VERIFIED,
                      reorder_s=c.reorder if isinstance(c, Connection) else None)
            c.buf = bytearray()  # every later packet of it is a duplicate: its bytes are not needed again
            if isinstance(c, Connection):
                c.view = memoryview(c.buf)
                self.reorder[c.peer[0]] = max(self.reorder.get(c.peer[0], 0.0), c.reorder)
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

    def _carry_reordering(self, receiver: Receiver) -> None:
        """A peer's new connection starts with the reordering window its finished ones
        learned (``Receiver._learn_reordering``: a NACKed packet that arrived after all
        widens it): the transfers from one host are one connection's messages, and the
        paths' spread one message found late holds for the next, as the EVs found
        ASSUMED_BAD do on the sending side. NACKs are decided in ``poll`` only, so a
        connection opened in this read is given its window in time."""
        conns = receiver.conns
        for c in islice(reversed(conns.values()), len(conns) - self.known):
            c.reorder = max(c.reorder, self.reorder.get(c.peer[0], 0.0))
        self.known = len(conns)

    def _finish(self, qp: int, f: Flight, now: float) -> None:
        del self.flights[qp]
        if f.sock is not self.sock:
            del self.sockets[f.sock.fileno()]
            del self.own[f.sock.fileno()]
            f.sock.close()
        late = f"no verdict from the receiver within {self.opts.timeout:g} s"
        s = f.sender
        if isinstance(s, RoceSender):
            assert f.qp_path is not None
            s.fail(now, late)  # still running at its deadline: the QP is given up
            fields = roce_flows.sent_fields(s, f.qp_path, roce_flows.plane_of(self._evs(f.dst)[0], f.qp_path.ev))
        else:
            fields = self._mrc_fields(s, f.dst, late)
        self.emit(ev="sent", flow=f.flow, t=now, **fields)

    def _mrc_fields(self, s: Sender, dst: str, late: str) -> dict[str, Any]:
        """A finished MRC-lite sender's figures; its EVs ASSUMED_BAD carried to the next transfer to ``dst``."""
        rep = s.report()
        events = rep.get("ev_events", [])
        self.bad[dst] = {ev for ev, st in s.evs.items() if st.state == ASSUMED_BAD}
        rtx = rep["retransmissions"]
        return {"ok": bool(s.ok and s.finished), "error": rep.get("error") or (None if s.finished else late),
                "retransmissions": rtx["total"], "resent_by": {k: rtx[k] for k in ("timeout", "nack", "trim_nack")},
                "rto_s": rep["rto_s"], "srtt_s": rep["srtt_s"], "control": rep["control"],
                "ev_events": [[round(e["t"], 4), e["ev"], e["event"], e["cause"]] for e in events
                              if e.get("cause") != CARRIED],
                "evs_retired": [e["ev"] for e in events if e.get("event") == "retired" and e.get("cause") != CARRIED],
                "evs_carried": [e["ev"] for e in events if e.get("event") == "retired" and e.get("cause") == CARRIED],
                "evs_recovered": [e["ev"] for e in events if e.get("event") in ("recovered", "restored")],
                "per_plane_packets": rep.get("per_plane_packets", {}), "packets_sent": rep.get("packets_sent")}

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
        # as of when the arrivals were read (their time): a hole this read found is not
        # judged older by the time the read took (a burst of 256 takes milliseconds),
        # its packet may be the next one in the socket
        wait = agent.poll(now)
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
