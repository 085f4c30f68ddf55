"""EV probes from this host: the round-trip time of chosen EVs towards a receiver.

Why: ``mrcctl probe`` and ``mrcctl locate``'s sweep ask a host to probe paths, as
an OCP MRC controller's EV probe request does. The probe is the transport's own
(docs/transport.md): a PROBE sent on the EV (in its BTH pkey, so over the EV's own
path), answered by the receiver with a PROBE_REPLY. A receiver answers probes only
within a transfer it accepted, so the prober first opens a one-byte transfer (OPEN,
then STATUS), probes, then sends that byte, so that the receiver counts the transfer
as done.

``python -m endpoints.probe --bind ADDR --plan JSON`` runs in the host's namespace
(the plan: ``[{"to": ADDR, "evs": [EV, ...]}, ...]``, possibly empty) as a probe
agent: it binds the MRC port, prints ``ready``, waits for a line on its standard
input, probes, prints one JSON object (per destination and EV: probes sent, answered
and the RTTs in seconds), and answers other agents' probes (a receiver of one-byte
transfers) until its standard input closes. Every host of a sweep runs one, so each
is both prober and receiver on the one MRC port: the answers come back over EV paths
too (a NIC takes a packet for MRC-lite only on that port; any other goes over its
spraying, whose flow hash may pick a dead path for a whole flow). When a sender or
receiver of the host holds the port, or with ``--probe-only``, the agent binds any
free port and probes only.
"""

from __future__ import annotations

import hashlib
import json
import random
import select
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from endpoints import io, wire
from endpoints.receiver import Receiver, ReceiverConfig
from endpoints.wire import EV_OFFSET, OP_PROBE, OP_PROBE_REPLY, OP_STATUS, PROBE, PROBE_LEN, STATUS_LEN

BYTE = b"\x00"  # the one-byte transfer a probe session is
OPEN_WAIT = 3.0  # seconds an OPEN is tried at least (a receiver just started, busy Python switches)


@dataclass
class EvProbe:
    ev: int
    sent: int = 0
    rtts: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        r = self.rtts
        return {"ev": self.ev, "sent": self.sent, "answered": len(r),
                "loss": round(1 - len(r) / self.sent, 4) if self.sent else None,
                "rtt_min": min(r) if r else None, "rtt_avg": sum(r) / len(r) if r else None,
                "rtt_max": max(r) if r else None}


def _on_ev(payload: bytes, ev: int) -> bytes:
    """``payload`` with ``ev`` in its BTH pkey (what endpoints/io.py does for the transport)."""
    b = bytearray(payload)
    b[EV_OFFSET:EV_OFFSET + 2] = ev.to_bytes(2, "big")
    return bytes(b)


class Agent:
    """The agent's one socket: answers go to the session waiting for them, everything
    else to the receiver of other agents' one-byte transfers (when it holds the MRC port)."""

    def __init__(self, sock: socket.socket, serve: bool) -> None:
        self.sock = sock
        self.receiver = Receiver(ReceiverConfig(max_bytes=len(BYTE), max_connections=4096)) if serve else None
        self.session: Session | None = None

    def send(self, payload: bytes, ev: int, to: Any) -> str | None:
        try:
            self.sock.sendto(_on_ev(payload, ev), to)
        except OSError as exc:  # a full buffer or no route: lost, as on a dead path
            return exc.strerror
        return None

    def receive(self, until: float, stop: Any = None) -> bool:
        """Handle what arrives until ``until``; False when ``stop`` (a file) became readable."""
        watch = [self.sock] if stop is None else [self.sock, stop]
        while True:
            now = time.monotonic()
            if self.receiver is not None:
                for tx in self.receiver.poll(now):
                    self.send(tx.payload, tx.ev, tx.peer)
            left = until - now
            if left <= 0:
                return True
            ready, _, _ = select.select(watch, [], [], min(left, 0.01) if self.receiver else left)
            if stop is not None and stop in ready:
                return False
            if self.sock not in ready:
                continue
            try:
                data, peer = self.sock.recvfrom(65536)
            except (BlockingIOError, InterruptedError, ConnectionRefusedError):
                continue
            self.on_packet(data, peer, time.monotonic())

    def on_packet(self, data: bytes, peer: Any, now: float) -> None:
        if len(data) < wire.BTH_LEN:
            return
        if data[0] in (OP_STATUS, OP_PROBE_REPLY):
            if self.session is not None:
                self.session.on_packet(data, now)
        elif self.receiver is not None:
            ev = int.from_bytes(data[EV_OFFSET:EV_OFFSET + 2], "big")
            for tx in self.receiver.on_packet(data, now, peer, ev):
                self.send(tx.payload, tx.ev, tx.peer)


class Session:
    """One destination: open, probe each EV ``count`` times, close."""

    def __init__(self, agent: Agent, to: str, port: int, evs: Sequence[int], rng: random.Random) -> None:
        self.agent, self.dst = agent, (to, port, 0, 0) if ":" in to else (to, port)
        self.evs = {ev: EvProbe(ev) for ev in evs}
        self.qp = rng.randrange(1, wire.QP_MASK + 1)
        self.first_psn = rng.randrange(0, wire.PSN_MOD)
        self.status: wire.Status | None = None
        self.outstanding: dict[int, tuple[int, float]] = {}  # seq -> (ev, sent at)
        self.seq = rng.randrange(0, 1 << 16)
        self.error: str | None = None

    def _send(self, payload: bytes, ev: int) -> None:
        self.error = self.agent.send(payload, ev, self.dst) or self.error

    def receive(self, until: float) -> None:
        self.agent.receive(until)

    def open(self, deadline: float) -> bool:
        """OPEN (on every EV at once: a dead path costs nothing) until the receiver accepts."""
        evs = list(self.evs) or [0]
        o = wire.Open(evs[0], wire.VERSION, self.qp, self.first_psn, len(BYTE), 1000, 1, hashlib.sha256(BYTE).digest())
        while time.monotonic() < deadline:
            for ev in evs:
                self._send(o.pack(), ev)
            self.receive(time.monotonic() + 0.2)
            if self.status is not None:
                if self.status.state != wire.STATE_ACCEPTED:
                    self.error = wire.REFUSE_REASONS.get(self.status.reason, "the receiver refused the transfer")
                    return False
                return True
        self.error = self.error or "no answer to OPEN (is an MRC-lite receiver running there?)"
        return False

    def probe_round(self) -> None:
        assert self.status is not None
        for ev, p in self.evs.items():
            self.seq = (self.seq + 1) & 0xFFFFFFFF
            now = time.monotonic()
            self.outstanding[self.seq] = (ev, now)
            self._send(wire.probe(OP_PROBE, self.status.receiver_qp, ev, self.seq, int(now * 1e9) & (2**64 - 1)), ev)
            p.sent += 1

    def on_packet(self, data: bytes, now: float) -> None:
        if len(data) < wire.BTH_LEN:
            return
        op = data[0]
        if op == OP_STATUS and len(data) >= STATUS_LEN:
            st = wire.Status.unpack(data)
            if st.sender_qp == self.qp and self.status is None:
                self.status = st
        elif op == OP_PROBE_REPLY and len(data) >= PROBE_LEN:
            (_, _, _, qp, _, ev, _, seq, _) = PROBE.unpack_from(data)
            rec = self.outstanding.pop(seq, None)
            if (qp & wire.QP_MASK) == self.qp and rec is not None and rec[0] == ev:
                self.evs[ev].rtts.append(now - rec[1])

    def close(self) -> None:
        """Send the transfer's one byte, so the receiver counts it done (no answer awaited)."""
        if self.status is None:
            return
        st = self.status
        header = wire.data_header(st.receiver_qp, self.first_psn, st.vaddr, st.rkey, len(BYTE), True)
        for ev in self.evs:  # on every EV: one of them works if any does
            self._send(header + BYTE, ev)

    def result(self, to: str) -> dict[str, Any]:
        return {"to": to, "opened": self.status is not None, "error": self.error,
                "evs": [p.summary() for p in self.evs.values()]}


def _socket(bind: str, probe_only: bool) -> tuple[socket.socket, bool]:
    """The MRC port when free and wanted (True: the agent answers probes too), else any free port."""
    if not probe_only:
        try:
            return io.listen(bind, wire.UDP_PORT_MRC, want_tclass=False), True
        except io.IoError:
            pass
    return io.listen(bind, 0, want_tclass=False), False


def probe(agent: Agent, plan: Sequence[dict[str, Any]], count: int, interval: float, timeout: float,
          port: int = wire.UDP_PORT_MRC, seed: int | None = None) -> list[dict[str, Any]]:
    """Probe every EV of every destination of ``plan`` ``count`` times, ``interval``
    seconds apart; an answer later than ``timeout`` after its probe counts as lost."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for item in plan:
        s = Session(agent, str(item["to"]), port, [int(e) for e in item["evs"]], rng)
        agent.session = s
        if s.open(time.monotonic() + max(timeout, OPEN_WAIT)):
            for k in range(count):
                s.probe_round()
                s.receive(time.monotonic() + (interval if k < count - 1 else timeout))
            s.close()
        agent.session = None
        out.append(s.result(str(item["to"])))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m endpoints.probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--bind", required=True)
    ap.add_argument("--plan", required=True, help='[{"to": ADDR, "evs": [EV, ...]}, ...]')
    ap.add_argument("--count", type=int, default=5)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--port", type=int, default=wire.UDP_PORT_MRC)
    ap.add_argument("--probe-only", action="store_true",
                    help="never take the MRC port (a transfer of this host may be about to); answer no probes")
    a = ap.parse_args(argv)
    try:
        plan = json.loads(a.plan)
        sock, serve = _socket(a.bind, a.probe_only)
    except (ValueError, io.IoError) as exc:
        print(f"error: probe: {exc}", file=sys.stderr)
        return 1
    agent = Agent(sock, serve)
    try:
        print("ready", flush=True)
        if not sys.stdin.readline():
            return 0
        try:
            results = probe(agent, plan, a.count, a.interval, a.timeout, a.port)
        except (ValueError, KeyError, TypeError) as exc:
            print(f"error: probe: bad plan: {exc}", file=sys.stderr)
            return 1
        print(json.dumps({"bind": a.bind, "port": sock.getsockname()[1], "answers_probes": serve,
                          "count": a.count, "results": results}), flush=True)
        while agent.receive(time.monotonic() + 3600, stop=sys.stdin):
            pass
    finally:
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
