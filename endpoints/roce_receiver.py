"""The RoCE baseline's responder: RC queue pairs as a pure state machine.

Each QP accepts only its expected PSN (docs/transport.md, "The RoCEv2 baseline"):

- the expected packet is placed where its message puts it (a First or Only packet's
  RETH names the message's address; Middle and Last packets follow it in order,
  as on an RC QP, which is why nothing but the expected PSN can be placed), and
  acknowledged when its AckReq is set;
- a packet ahead of it (a gap) is dropped, and the first one of each gap answered
  with one NAK "PSN sequence error" naming the expected PSN; no other NAK until the
  expected PSN has arrived, as the IB spec has it;
- a packet behind it (a duplicate: the sender went back) is dropped, and
  acknowledged again when its AckReq is set;
- a data packet that arrives with ECN CE, whatever its PSN, makes the QP send a CNP
  to the sender's QP unless it sent one less than ``cnp_interval`` ago (DCQCN's
  notification point).

The transfer's SHA-256 is checked once every byte is placed (STATUS VERIFIED or
CORRUPT, as MRC-lite's receiver does). The requester: ``endpoints/roce_sender.py``.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from endpoints import wire
from endpoints.common import CE, Tx
from endpoints.receiver import peer_text
from endpoints.roce_config import RoceReceiverConfig
from endpoints.wire import (
    BTH,
    BTH_LEN,
    DATA,
    DATA_HDR_LEN,
    OP_OPEN,
    OP_WRITE,
    OP_WRITE_FIRST,
    OP_WRITE_LAST,
    OP_WRITE_MIDDLE,
    OPEN_LEN,
    PSN_MASK,
    QP_MASK,
    psn_diff,
)

_DATA_OPCODES = (OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE)


@dataclass
class QueuePair:
    """One transfer on the responding side."""

    qp: int
    peer: Any
    sender_qp: int
    first_psn: int
    length: int
    mtu: int
    window: int
    digest: bytes
    rkey: int
    vaddr: int
    ev: int  # the QP's EV (its pkey): every answer leaves on it
    opened_at: float
    buf: bytearray = field(repr=False, default_factory=bytearray)
    n_packets: int = 0
    expected: int = 0  # the packet index (so PSN) accepted next
    message_end: int = -1  # byte offset where the message being written ends; -1: between messages
    msn: int = 0  # messages completed
    nak_sent: bool = False  # a NAK for the current gap is out: no other until the expected PSN arrives
    last_cnp: float | None = None
    state: int = wire.STATE_ACCEPTED
    completed_at: float | None = None
    counts: Counter[str] = field(default_factory=Counter)
    series: list[tuple[float, int]] = field(default_factory=lambda: [(0.0, 0)])
    next_sample: float = 0.0
    hasher: Any = field(repr=False, default_factory=hashlib.sha256)

    def psn(self, idx: int) -> int:
        return (self.first_psn + idx) & PSN_MASK

    def report(self) -> dict[str, Any]:
        elapsed = None if self.completed_at is None else self.completed_at - self.opened_at
        return {
            "qp": self.qp, "sender_qp": self.sender_qp, "peer": peer_text(self.peer), "ev": self.ev,
            "bytes": self.length, "mtu": self.mtu,
            "verdict": {wire.STATE_ACCEPTED: "incomplete", wire.STATE_VERIFIED: "verified",
                        wire.STATE_CORRUPT: "corrupt"}[self.state],
            "opened_at_s": self.opened_at, "completion_time_s": elapsed,
            "goodput_bps": (8 * self.length / elapsed) if elapsed else None,
            "received_bytes": min(self.expected * self.mtu, self.length),
            "messages": self.msn,
            "counts": {k: self.counts[k] for k in ("packets", "acks", "naks", "cnps", "ce", "out_of_sequence",
                                                    "duplicates")},
            "delivered_series": [[round(t, 6), b] for t, b in self.series],
        }


class RoceReceiver:
    """The responder: up to ``max_connections`` QPs on one port. Same interface as
    MRC-lite's ``Receiver`` (``on_packet(data, now, peer, ev, tclass)``, ``poll``,
    ``next_wakeup``, ``completed``, ``report``), so ``endpoints/io.py`` drives either."""

    def __init__(self, config: RoceReceiverConfig | None = None) -> None:
        self.cfg = config if config is not None else RoceReceiverConfig()
        self.cfg.check()
        self._rng = random.Random(self.cfg.limits.seed)
        self.conns: dict[int, QueuePair] = {}
        self._by_sender: dict[tuple[Any, int], int] = {}
        self.drops: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.completed: list[QueuePair] = []

    def next_wakeup(self) -> float | None:
        return None  # everything it sends answers a packet

    def poll(self, now: float) -> list[Tx]:
        return []

    # -- packets in -----------------------------------------------------------

    def on_packet(self, data: bytes | memoryview, now: float, peer: Any, ev: int, tclass: int = 0) -> list[Tx]:
        if len(data) < BTH_LEN:
            self.drops["truncated"] += 1
            return []
        opcode = data[0]
        if opcode in _DATA_OPCODES:
            return self._on_data(data, opcode, now, peer, tclass)
        if opcode == OP_OPEN:
            if len(data) < OPEN_LEN:
                self.drops["truncated"] += 1
                return []
            return self._on_open(wire.Open.unpack(data), now, peer, ev)
        self.drops["bad_opcode"] += 1
        return []

    def _refusal(self, o: wire.Open) -> int:
        cfg = self.cfg.limits
        if o.version != wire.VERSION_ROCE:
            return wire.REFUSE_VERSION
        if o.length > cfg.max_bytes or (cfg.expect_bytes is not None and o.length != cfg.expect_bytes):
            return wire.REFUSE_LENGTH
        if not 0 < o.mtu <= wire.MAX_MTU:
            return wire.REFUSE_MTU
        if not 0 < o.window <= cfg.max_window:
            return wire.REFUSE_WINDOW
        if len(self.conns) - len(self.completed) >= cfg.max_connections:
            return wire.REFUSE_BUSY
        return 0

    def _on_open(self, o: wire.Open, now: float, peer: Any, ev: int) -> list[Tx]:
        qp = self._by_sender.get((peer, o.sender_qp))
        if qp is not None:
            c = self.conns[qp]
            if (c.length, c.mtu, c.digest, c.first_psn) != (o.length, o.mtu, o.digest, o.first_psn):
                self.drops["bad_open"] += 1
                return []
            return [self._status(c)]
        reason = self._refusal(o)
        buf = bytearray()
        if not reason:
            try:
                buf = bytearray(o.length)
            except (MemoryError, OverflowError):
                reason = wire.REFUSE_MEMORY
        if reason:
            self.counts["refused"] += 1
            return [Tx(ev, wire.Status(ev, o.sender_qp, 0, wire.STATE_REFUSED, reason, 0, 0, 0).pack(), peer)]
        qp = self._rng.randrange(1, QP_MASK + 1)
        while qp in self.conns:
            qp = self._rng.randrange(1, QP_MASK + 1)
        c = QueuePair(qp, peer, o.sender_qp, o.first_psn, o.length, o.mtu, o.window, o.digest,
                      rkey=self._rng.getrandbits(32), vaddr=self._rng.randrange(1, 1 << 40) << 12, ev=ev,
                      opened_at=now, buf=buf, n_packets=-(-o.length // o.mtu))
        c.next_sample = now + self.cfg.limits.sample_interval
        self.conns[qp] = c
        self._by_sender[(peer, o.sender_qp)] = qp
        out = [self._status(c)]
        if c.n_packets == 0:
            out += self._complete(c, now)
        return out

    def _status(self, c: QueuePair) -> Tx:
        return Tx(c.ev, wire.Status(c.ev, c.sender_qp, c.psn(c.expected - 1), c.state, 0, c.qp, c.rkey,
                                    c.vaddr).pack(), c.peer)

    def _ack(self, c: QueuePair, syndrome: int = wire.SYNDROME_ACK) -> Tx:
        """ACK of everything before the expected PSN, or NAK naming it (BTH PSN:
        the last PSN acknowledged, or the expected one for a NAK)."""
        if syndrome == wire.SYNDROME_ACK:
            c.counts["acks"] += 1
            psn = c.psn(c.expected - 1)
        else:
            c.counts["naks"] += 1
            psn = c.psn(c.expected)
        return Tx(c.ev, wire.ack(c.sender_qp, psn, syndrome, c.ev, c.psn(c.expected), 0, msn=c.msn), c.peer)

    def _on_data(self, data: bytes | memoryview, opcode: int, now: float, peer: Any, tclass: int) -> list[Tx]:
        (_, _, _, qp, w2) = BTH.unpack_from(data)
        c = self.conns.get(qp & QP_MASK)
        if c is None or c.peer != peer:
            self.drops["wrong_qp" if c is None else "wrong_peer"] += 1
            return []
        out: list[Tx] = []
        if (tclass & 3) == CE:
            self._notify(c, now, out)
        d = psn_diff(w2 & PSN_MASK, c.psn(c.expected)) if c.state == wire.STATE_ACCEPTED else -1
        if d:
            self._unexpected(c, d, bool(w2 & wire.ACK_REQ), out)
            return out
        problem = self._place(c, data, opcode)
        if problem:
            self.drops[problem] += 1
        elif c.expected == c.n_packets:
            out += self._complete(c, now)
        else:
            if w2 & wire.ACK_REQ:
                out.append(self._ack(c))
            if now >= c.next_sample:
                c.series.append((now - c.opened_at, c.expected * c.mtu))
                c.next_sample = now + self.cfg.limits.sample_interval
        return out

    def _notify(self, c: QueuePair, now: float, out: list[Tx]) -> None:
        """A CE-marked arrival (DCQCN's notification point): a CNP, unless one left
        for this QP less than ``cnp_interval`` ago."""
        c.counts["ce"] += 1
        if c.last_cnp is None or now - c.last_cnp >= self.cfg.cnp_interval:
            c.last_cnp = now
            c.counts["cnps"] += 1
            out.append(Tx(c.ev, wire.cnp(c.sender_qp), c.peer, self.cfg.cnp_tclass))

    def _unexpected(self, c: QueuePair, d: int, ack_req: bool, out: list[Tx]) -> None:
        """A packet ``d`` PSNs from the expected one (or any, once complete: -1):
        dropped; ahead, the first of its gap is NAKed; behind, a duplicate,
        acknowledged again if it asks."""
        if d >= c.window or d <= -c.window:
            self.drops["psn_out_of_window"] += 1
        elif d > 0:
            c.counts["out_of_sequence"] += 1
            if not c.nak_sent:  # one NAK per gap
                c.nak_sent = True
                out.append(self._ack(c, wire.SYNDROME_NAK_PSN_SEQUENCE))
        else:
            c.counts["duplicates"] += 1
            if ack_req:
                out.append(self._ack(c))

    def _place(self, c: QueuePair, data: bytes | memoryview, opcode: int) -> str:
        """Place the expected packet; a drop reason if it does not fit its place
        (nothing written then), else ''."""
        off = c.expected * c.mtu
        first = opcode in (OP_WRITE_FIRST, OP_WRITE)
        if first != (c.message_end < 0):
            return "bad_opcode_sequence"  # a First/Only inside a message, or a Middle/Last outside one
        if first:
            if len(data) < DATA_HDR_LEN:
                return "truncated"
            (_, _, _, _, _, vaddr, rkey, dma_len) = DATA.unpack_from(data)
            if rkey != c.rkey:
                return "bad_rkey"
            if vaddr != c.vaddr + off or dma_len < 1 or off + dma_len > c.length:
                return "bad_address"
            end, hdr = off + dma_len, DATA_HDR_LEN
        else:
            end, hdr = c.message_end, BTH_LEN
        n = min(c.mtu, end - off)
        last = off + n == end
        if (opcode == OP_WRITE and not last) or (opcode == OP_WRITE_FIRST and last) \
                or (opcode == OP_WRITE_MIDDLE and last) or (opcode == OP_WRITE_LAST and not last):
            return "bad_opcode_sequence"
        if len(data) - hdr != n:
            return "bad_length"
        c.buf[off:off + n] = data[hdr:hdr + n]
        c.hasher.update(data[hdr:hdr + n])
        c.counts["packets"] += 1
        c.expected += 1
        c.nak_sent = False
        if last:
            c.message_end = -1
            c.msn += 1
        else:
            c.message_end = end
        return ""

    def _complete(self, c: QueuePair, now: float) -> list[Tx]:
        """Every byte placed: the last ACK and the verdict."""
        c.completed_at = now
        c.state = wire.STATE_VERIFIED if c.hasher.digest() == c.digest else wire.STATE_CORRUPT
        c.series.append((now - c.opened_at, c.length))
        self.completed.append(c)
        out = [self._ack(c)] if c.n_packets else []
        return out + [self._status(c)]

    def report(self) -> dict[str, Any]:
        return {"transport": "roce", "connections": [c.report() for c in self.conns.values()],
                "dropped": dict(self.drops), "refused": self.counts["refused"]}
