"""The MRC-lite receiver as a pure state machine (no sockets, no clocks).

Places every data packet at its own address whatever the order of arrival, answers
with ACKs (cumulative PSN + SACK bitmap), loss NACKs and trim NACKs, answers probes,
and sends all its feedback over the connection's rotation of the sender's EVs
(docs/transport.md, "Feedback"). The sender: ``endpoints/sender.py``.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from endpoints import wire
from endpoints.common import CE, HALF_PSN, Tx
from endpoints.wire import (
    ACK,
    BTH_LEN,
    DATA,
    DATA_HDR_LEN,
    IMMDT_LEN,
    OP_ACK,
    OP_OPEN,
    OP_PROBE,
    OP_PROBE_REPLY,
    OP_WRITE,
    OP_WRITE_IMM,
    OPEN_LEN,
    PROBE,
    PROBE_LEN,
    PSN_MASK,
    QP_MASK,
)

log = logging.getLogger(__name__)


def peer_text(peer: Any) -> str:
    """A peer for reports and logs: ``[addr]:port`` / ``addr:port`` for a socket
    address (``endpoints/io.py``'s: address and port first), else the value as text."""
    if isinstance(peer, tuple) and len(peer) in (2, 4):
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(peer)


@dataclass(frozen=True)
class ReceiverConfig:
    """Receiver parameters; times in seconds."""

    max_bytes: int = 1 << 30  # largest transfer accepted (its buffer is allocated whole)
    expect_bytes: int | None = None  # accept only transfers of exactly this length
    max_window: int = 0xFFFF
    max_connections: int = 16
    nack_delay: float = 0.005  # a hole older than this is NACKed (reordering is normal) ...
    nack_delay_max: float = 1.0  # ... and the connection's reordering window grows up to this (the RTO's ceiling)
    renack_interval: float = 0.02  # a hole still open is NACKed again after this
    ack_delay: float = 0.001  # arrivals without ack_req are acknowledged within this
    trim_dscp: int = 62  # the DSCP the NIC copies into the traffic class of a trimmed packet
    sample_interval: float = 0.01
    seed: int = 0  # QPs, rkeys, buffer addresses


@dataclass
class Connection:
    """One transfer on the receiving side."""

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
    opened_at: float
    buf: bytearray = field(repr=False, default_factory=bytearray)
    n_packets: int = 0
    cum: int = -1  # every packet index <= cum has arrived
    bits: int = 0  # bit i: packet cum + 1 + i has arrived
    highest: int = -1
    last_ev: int = 0
    last_idx: int = 0
    ack_due: float | None = None
    state: int = wire.STATE_ACCEPTED
    completed_at: float | None = None
    holes: deque[tuple[float, int]] = field(default_factory=deque)  # (first seen missing, idx)
    renacks: deque[tuple[float, int]] = field(default_factory=deque)  # (NACKed at, idx)
    reorder: float = 0.0  # the reordering window: a hole older than this is NACKed
    nacked: dict[int, float] = field(default_factory=dict)  # NACKed, first transmission not arrived: idx -> first seen missing
    counts: Counter[str] = field(default_factory=Counter)
    ev_packets: Counter[int] = field(default_factory=Counter)
    back_evs: list[int] = field(default_factory=list)  # the feedback rotation: EVs the sender used, first seen first
    back_next: int = 0
    series: list[tuple[float, int]] = field(default_factory=lambda: [(0.0, 0)])
    next_sample: float = 0.0
    hasher: Any = field(repr=False, default_factory=hashlib.sha256)  # over bytes [0, hashed)
    hashed: int = 0
    view: memoryview = field(repr=False, init=False)
    packets: int = 0  # placed (hot counters are attributes, the rest in ``counts``)
    received_bytes: int = 0
    acks: int = 0

    def __post_init__(self) -> None:
        self.view = memoryview(self.buf)

    def psn(self, idx: int) -> int:
        return (self.first_psn + idx) & PSN_MASK

    def learn_ev(self, ev: int) -> None:
        """Add ``ev`` (an EV the sender sent data or OPEN on) to the feedback rotation."""
        if ev not in self.ev_packets and ev not in self.back_evs:
            self.back_evs.append(ev)

    def back_ev(self) -> int:
        """The EV (so the path back) of the next feedback packet: the
        rotation goes over every EV the sender used, so a dead reverse path loses
        only every n-th feedback packet, and the next ones (cumulative ACK, SACK
        bitmap, repeated NACKs) carry the same news over other paths."""
        evs = self.back_evs
        ev = evs[self.back_next % len(evs)]
        self.back_next += 1
        return ev

    def has(self, idx: int) -> bool:
        return idx <= self.cum or bool((self.bits >> (idx - self.cum - 1)) & 1)

    def report(self) -> dict[str, Any]:
        elapsed = None if self.completed_at is None else self.completed_at - self.opened_at
        return {
            "qp": self.qp, "sender_qp": self.sender_qp, "peer": peer_text(self.peer), "bytes": self.length,
            "mtu": self.mtu, "verdict": {wire.STATE_ACCEPTED: "incomplete", wire.STATE_VERIFIED: "verified",
                                          wire.STATE_CORRUPT: "corrupt"}[self.state],
            "opened_at_s": self.opened_at,  # the series' times are seconds after this
            "completion_time_s": elapsed,
            "goodput_bps": (8 * self.length / elapsed) if elapsed else None,
            "received_bytes": self.received_bytes,
            "nack_delay_s": self.reorder,
            "counts": {"packets": self.packets, "bytes": self.received_bytes, "acks": self.acks, **self.counts},
            "per_ev_packets": {str(ev): n for ev, n in sorted(self.ev_packets.items())},
            "delivered_series": [[round(t, 6), b] for t, b in self.series],
        }


class Receiver:
    """The receiving side: any number of transfers (up to ``max_connections``) on one
    port, each with its own QP and buffer.

    ``on_packet(data, now, peer, ev, tclass)`` takes one UDP payload with its source
    (``peer``: any value, in ``endpoints/io.py`` the address and UDP port), its EV
    (BTH pkey) and its IPv6 traffic class; it and ``poll(now)`` return
    the ACKs, NACKs, probe replies and STATUS packets to send. Malformed or hostile
    packets are dropped and counted in ``drops`` and never touch a buffer.
    """

    def __init__(self, config: ReceiverConfig = ReceiverConfig()) -> None:
        for name in ("nack_delay", "ack_delay"):
            if not getattr(config, name) >= 0:  # NaN too
                raise ValueError(f"receiver: {name} must be 0 seconds or more")
        if not config.renack_interval > 0 or not config.sample_interval > 0:
            raise ValueError("receiver: renack_interval and sample_interval must be more than 0 seconds")
        if not 0 <= config.trim_dscp <= 63:
            raise ValueError(f"receiver: trim DSCP {config.trim_dscp} outside 0..63")
        self.cfg = config
        self._rng = random.Random(config.seed)
        self.conns: dict[int, Connection] = {}
        self._by_sender: dict[tuple[Any, int], int] = {}
        self.drops: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.completed: list[Connection] = []

    def next_wakeup(self) -> float | None:
        wake = None
        for c in self.conns.values():
            due = c.ack_due
            holes, renacks = c.holes, c.renacks
            # Holes (and repeats) filled since they were noted are dropped now rather
            # than at their time, where poll would drop them and send nothing: no
            # wake-up for them.
            while holes and c.has(holes[0][1]):
                holes.popleft()
            while renacks and c.has(renacks[0][1]):
                renacks.popleft()
            if holes:
                hole = holes[0][0] + c.reorder
                due = hole if due is None or hole < due else due
            if renacks:
                renack = renacks[0][0] + self._renack_after(c)
                due = renack if due is None or renack < due else due
            if due is not None and (wake is None or due < wake):
                wake = due
        return wake

    # -- packets in -----------------------------------------------------------

    def on_packet(self, data: bytes | memoryview, now: float, peer: Any, ev: int, tclass: int = 0) -> list[Tx]:
        n = len(data)
        if n < BTH_LEN:
            self.drops["truncated"] += 1
            return []
        opcode = data[0]
        if opcode == OP_WRITE or opcode == OP_WRITE_IMM:
            return self._on_data(data, n, opcode, now, peer, ev, tclass)
        if opcode == OP_PROBE:
            if n < PROBE_LEN:
                self.drops["truncated"] += 1
                return []
            (_, _, _, qp, _, pev, _, seq, stamp) = PROBE.unpack_from(data)
            c = self.conns.get(qp & QP_MASK)
            if c is None or c.peer != peer:
                self.drops["wrong_qp"] += 1
                return []
            if pev != ev:
                self.drops["bad_probe"] += 1
                return []
            c.counts["probes"] += 1
            return [Tx(c.back_ev(), wire.probe(OP_PROBE_REPLY, c.sender_qp, ev, seq, stamp), peer)]
        if opcode == OP_OPEN:
            if n < OPEN_LEN:
                self.drops["truncated"] += 1
                return []
            return self._on_open(wire.Open.unpack(data), now, peer, ev)
        self.drops["bad_opcode"] += 1
        return []

    def _on_open(self, o: wire.Open, now: float, peer: Any, ev: int) -> list[Tx]:
        qp = self._by_sender.get((peer, o.sender_qp))
        if qp is not None:
            c = self.conns[qp]
            if (c.length, c.mtu, c.digest, c.first_psn) != (o.length, o.mtu, o.digest, o.first_psn):
                self.drops["bad_open"] += 1
                return []
            c.learn_ev(ev)
            return [self._status(c, ev)]
        cfg = self.cfg
        reason = 0
        if o.version != wire.VERSION:
            reason = wire.REFUSE_VERSION
        elif o.length > cfg.max_bytes or (cfg.expect_bytes is not None and o.length != cfg.expect_bytes):
            reason = wire.REFUSE_LENGTH
        elif not 0 < o.mtu <= wire.MAX_MTU:
            reason = wire.REFUSE_MTU
        elif not 0 < o.window <= cfg.max_window:
            reason = wire.REFUSE_WINDOW
        elif len(self.conns) - len(self.completed) >= cfg.max_connections:
            reason = wire.REFUSE_BUSY
        buf = bytearray()
        if not reason:
            try:  # a length within --max-bytes may still be more than this host has
                buf = bytearray(o.length)
            except (MemoryError, OverflowError):
                reason = wire.REFUSE_MEMORY
        if reason:
            self.counts["refused"] += 1
            log.info("refused a transfer from %s (sender QP %#x): %s", peer_text(peer), o.sender_qp,
                        wire.REFUSE_REASONS[reason])
            return [Tx(ev, wire.Status(ev, o.sender_qp, 0, wire.STATE_REFUSED, reason, 0, 0, 0).pack(), peer)]
        qp = self._rng.randrange(1, QP_MASK + 1)
        while qp in self.conns:
            qp = self._rng.randrange(1, QP_MASK + 1)
        c = Connection(qp, peer, o.sender_qp, o.first_psn, o.length, o.mtu, o.window, o.digest,
                       rkey=self._rng.getrandbits(32), vaddr=self._rng.randrange(1, 1 << 40) << 12,
                       opened_at=now, buf=buf, n_packets=-(-o.length // o.mtu))
        c.next_sample = now + cfg.sample_interval
        c.reorder = cfg.nack_delay
        self.conns[qp] = c
        self._by_sender[(peer, o.sender_qp)] = qp
        log.info("transfer from %s: %d bytes in %d packets, QP %#x", peer_text(peer), o.length, c.n_packets, qp)
        c.learn_ev(ev)
        out = [self._status(c, ev)]
        if c.n_packets == 0:
            out += self._complete(c, now, ev, None)
        return out

    def _status_bytes(self, c: Connection, ev: int) -> bytes:
        return wire.Status(ev, c.sender_qp, c.psn(c.cum), c.state, 0, c.qp, c.rkey, c.vaddr).pack()

    def _status(self, c: Connection, ev: int) -> Tx:
        """STATUS echoing ``ev``, on the connection's next feedback EV."""
        return Tx(c.back_ev(), self._status_bytes(c, ev), c.peer)

    def _on_data(self, data: bytes | memoryview, n: int, opcode: int, now: float, peer: Any, ev: int,
                 tclass: int) -> list[Tx]:
        target = self._data_target(data, n, opcode, peer)
        if target is None:
            return []
        c, idx, hdr, dma_len, w2 = target
        trimmed = n == hdr and dma_len > 0
        ce = (tclass & 3) == CE
        if ce:  # congestion on this packet's path: echoed at once in the ACK's flags
            c.counts["ce"] += 1
        c.last_ev = ev
        c.last_idx = idx
        if ev not in c.ev_packets:
            c.learn_ev(ev)
        c.ev_packets[ev] += 1
        if trimmed:  # every trimmed arrival is counted, so the switches' trim counters tie with it
            c.counts["trimmed"] += 1
            if (tclass >> 2) == self.cfg.trim_dscp:
                c.counts["trimmed_marked"] += 1
        cum = c.cum
        if idx <= cum or (c.bits >> (idx - cum - 1)) & 1:
            c.counts["trimmed_duplicates" if trimmed else "duplicates"] += 1
            late = not trimmed and not w2 & wire.RESENT and self._late(c, idx, now)
            return [self._ack(c, ev, ce, late)]
        if trimmed:
            c.counts["trim_nacks"] += 1
            self._note_holes(c, idx, now)
            return [Tx(c.back_ev(), wire.ack(c.sender_qp, c.psn(cum), wire.SYNDROME_NACK_TRIMMED, ev, c.psn(idx), 1),
                       c.peer)]
        late = self._place(c, data, hdr, idx, dma_len, now, bool(w2 & wire.RESENT))
        if c.cum == c.n_packets - 1:
            return self._complete(c, now, ev, self._ack_bytes(c, ev, ce, late))
        if late:  # answered at once, so the sender takes back the NACK's blame of this EV
            return [self._ack(c, ev, ce, late)]
        if w2 & wire.ACK_REQ or ce:
            if not c.bits:  # in order: no bitmap
                c.ack_due = None
                c.acks += 1
                psn = (c.first_psn + c.cum) & PSN_MASK
                return [Tx(c.back_ev(), ACK.pack(OP_ACK, 0, 0xFFFF, c.sender_qp, psn, 0, ev,
                                                 wire.FLAG_CE if ce else 0, 0, (psn + 1) & PSN_MASK, 0), c.peer)]
            return [self._ack(c, ev, ce)]
        if c.ack_due is None:
            c.ack_due = now + self.cfg.ack_delay
        return []

    def _data_target(self, data: bytes | memoryview, n: int, opcode: int,
                     peer: Any) -> tuple[Connection, int, int, int, int] | None:
        """Check a data packet against its connection before anything is applied:
        (connection, packet index, header length, DMA length, BTH word 2), or None
        with the drop reason counted. Each PSN has one place in the message and a
        packet must name it exactly; a trimmed packet (no payload) is valid."""
        hdr = DATA_HDR_LEN + (IMMDT_LEN if opcode == OP_WRITE_IMM else 0)
        if n < hdr:
            self.drops["truncated"] += 1
            return None
        (_, _, _, qp, w2, vaddr, rkey, dma_len) = DATA.unpack_from(data)
        c = self.conns.get(qp & QP_MASK)
        reason = ("wrong_qp" if c is None else "wrong_peer" if c.peer != peer
                  else "bad_rkey" if rkey != c.rkey else "")
        if c is None or reason:
            self.drops[reason] += 1
            return None
        d = ((w2 - c.first_psn - c.cum + HALF_PSN) & PSN_MASK) - HALF_PSN  # psn_diff(psn, psn of cum)
        idx = c.cum + d
        if d > c.window or d <= -c.window or idx >= c.n_packets:
            self.drops["psn_out_of_window"] += 1
            return None
        if vaddr < c.vaddr or vaddr + dma_len > c.vaddr + c.length:
            self.drops["bad_address"] += 1
            return None
        off = idx * c.mtu
        if vaddr != c.vaddr + off or dma_len != min(c.mtu, c.length - off):
            self.drops["address_mismatch"] += 1
            return None
        present = n - hdr
        if present != dma_len and not (present == 0 and dma_len > 0):
            self.drops["truncated" if present < dma_len else "bad_length"] += 1
            return None
        return c, idx, hdr, dma_len, w2

    def _place(self, c: Connection, data: bytes | memoryview, hdr: int, idx: int, dma_len: int, now: float,
               resent: bool) -> bool:
        """Copy a first arrival to its place, note the holes it opens, move the
        cumulative PSN and hash what it made final. True: it is a first transmission
        that was NACKed (late, not lost)."""
        off = idx * c.mtu
        c.buf[off:off + dma_len] = data[hdr:hdr + dma_len]
        late = bool(c.nacked) and not resent and self._late(c, idx, now)
        c.packets += 1
        c.received_bytes += dma_len
        if idx > c.highest:
            if idx > c.highest + 1:
                self._note_holes(c, idx, now)
            c.highest = idx
        else:  # a first arrival below the highest: it was overtaken (reordering, or a resend)
            c.counts["out_of_order"] += 1
        cum = c.cum
        bits = c.bits | (1 << (idx - cum - 1))
        if bits & 1:
            t = (bits ^ (bits + 1)).bit_length() - 1
            c.cum = cum = cum + t
            bits >>= t
            # Bytes below the cumulative PSN are final: hash them now, so the check at
            # the end is instant (hashing 100 MB at once would stall the last ACK).
            end = min((cum + 1) * c.mtu, c.length)
            c.hasher.update(c.view[c.hashed:end])
            c.hashed = end
        c.bits = bits
        if now >= c.next_sample:
            c.series.append((now - c.opened_at, c.received_bytes))
            c.next_sample = now + self.cfg.sample_interval
        return late

    def _late(self, c: Connection, idx: int, now: float) -> bool:
        """Whether the first transmission of packet ``idx``, arriving now, was NACKed
        (before or after its resend arrived): then it was late, not lost, and the
        reordering window learns from it."""
        seen = c.nacked.pop(idx, None)
        if seen is None:
            return False
        self._learn_reordering(c, now - seen)
        return True

    def _learn_reordering(self, c: Connection, late: float) -> None:
        """A NACKed packet arrived in its first transmission (BTH ``resent`` 0), ``late``
        seconds after the hole was seen: the NACK was spurious, the packet was late,
        not lost. The reordering window grows to twice that, so later holes of the
        same spread are not NACKed: on a slow or loaded fabric the paths' delays
        differ by more than ``nack_delay``, and each spurious NACK costs a resend and
        retires a healthy EV. It never shrinks during the connection (a NACK later
        than needed delays only the recovery of a real loss)."""
        c.counts["spurious_nacks"] += 1
        cap = max(self.cfg.nack_delay_max, self.cfg.nack_delay)  # a configured delay above the cap stays
        c.reorder = min(cap, max(c.reorder, 2 * late))

    def _note_holes(self, c: Connection, idx: int, now: float) -> None:
        if idx > c.highest:
            holes = c.holes
            for j in range(c.highest + 1, idx):
                holes.append((now, j))
            c.highest = idx

    def _ack(self, c: Connection, ev: int, ce: bool = False, late: bool = False) -> Tx:
        """ACK echoing ``ev`` (and CE when its data packet arrived with CE, LATE when
        it was NACKed before it arrived), on the connection's next feedback EV."""
        return Tx(c.back_ev(), self._ack_bytes(c, ev, ce, late), c.peer)

    def _ack_bytes(self, c: Connection, ev: int, ce: bool = False, late: bool = False) -> bytes:
        """ACK: the cumulative PSN, and a bitmap of the 64 PSNs that end with the
        packet answered (or start after the cumulative PSN), so every packet is
        reported by its own ACK however far it is ahead of a hole."""
        c.ack_due = None
        c.acks += 1
        base = max(c.cum + 1, c.last_idx - 63)
        bits = (c.bits >> (base - c.cum - 1)) & 0xFFFFFFFFFFFFFFFF
        return wire.ack(c.sender_qp, c.psn(c.cum), wire.SYNDROME_ACK, ev, c.psn(base), bits,
                        (wire.FLAG_CE if ce else 0) | (wire.FLAG_LATE if late else 0))

    def _complete(self, c: Connection, now: float, ev: int, last_ack: bytes | None) -> list[Tx]:
        """Verify the digest; the last ACK (None: an empty transfer) and the verdict to send."""
        c.completed_at = now
        c.hasher.update(c.view[c.hashed:])
        c.hashed = c.length
        ok = c.hasher.digest() == c.digest
        c.state = wire.STATE_VERIFIED if ok else wire.STATE_CORRUPT
        c.series.append((now - c.opened_at, c.received_bytes))
        c.holes.clear()
        c.renacks.clear()
        c.nacked.clear()
        self.completed.append(c)
        if ok:
            log.info("transfer QP %#x complete: %d bytes, SHA-256 verified", c.qp, c.length)
        else:
            log.error("transfer QP %#x complete but its SHA-256 differs from the sender's", c.qp)
        # No later ACK can repair a lost last one: the last ACK and the verdict go
        # back over the next 4 EVs of the rotation (the echo names the EV answered),
        # so one dead path back does not cost the sender a timeout.
        status = self._status_bytes(c, ev)
        out: list[Tx] = []
        for _ in range(min(4, len(c.back_evs))):
            back = c.back_ev()
            if last_ack is not None:
                out.append(Tx(back, last_ack, c.peer))
            out.append(Tx(back, status, c.peer))
        return out

    # -- time -----------------------------------------------------------------

    def _renack_after(self, c: Connection) -> float:
        """How long a NACKed hole waits before it is NACKed again: ``renack_interval``,
        or the connection's reordering window when that is longer (a resend cannot
        be expected sooner than the paths' own spread; NACKing faster only loads the
        paths back with NACKs the sender ignores)."""
        return max(self.cfg.renack_interval, c.reorder)

    def poll(self, now: float) -> list[Tx]:
        """Delayed ACKs, and NACKs for holes older than ``nack_delay``."""
        out: list[Tx] = []
        for c in self.conns.values():
            if c.ack_due is not None and now >= c.ack_due:
                out.append(self._ack(c, c.last_ev))
            if c.state != wire.STATE_ACCEPTED:
                continue
            holes, renacks = c.holes, c.renacks
            if (holes and holes[0][0] + c.reorder <= now) or (renacks and renacks[0][0] + self._renack_after(c) <= now):
                self._nack(c, now, out)
        return out

    def _nack(self, c: Connection, now: float, out: list[Tx]) -> None:
        """NACK the holes whose time came (first NACKs and repeated ones) that are still open."""
        lost: list[int] = []
        holes, nacked = c.holes, c.nacked
        while holes and holes[0][0] + c.reorder <= now:
            seen, j = holes.popleft()
            if not c.has(j):
                lost.append(j)
                nacked[j] = seen
        renacks = c.renacks
        renack_after = self._renack_after(c)
        while renacks and renacks[0][0] + renack_after <= now:
            _, j = renacks.popleft()
            if not c.has(j):
                lost.append(j)
        if not lost:
            return
        lost.sort()
        i = 0
        while i < len(lost):
            base = lost[i]
            bits = 0
            while i < len(lost) and lost[i] - base < 64:
                bits |= 1 << (lost[i] - base)
                c.renacks.append((now, lost[i]))
                i += 1
            c.counts["nacks"] += 1
            out.append(Tx(c.back_ev(), wire.ack(c.sender_qp, c.psn(c.cum), wire.SYNDROME_NACK_LOSS,
                                              c.last_ev, c.psn(base), bits), c.peer))

    def report(self) -> dict[str, Any]:
        return {"connections": [c.report() for c in self.conns.values()], "dropped": dict(self.drops),
                "refused": self.counts["refused"]}
