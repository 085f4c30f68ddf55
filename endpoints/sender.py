"""The MRC-lite sender as a pure state machine (no sockets, no clocks).

One transfer = one RDMA-WRITE-style message cut into packets sprayed over the EVs
(docs/transport.md: EV states, what retires and recovers an EV, the events). Time is
passed in (``now``); ``endpoints/io.py`` drives it with sockets and a clock,
``tests/endpoints/simnet.py`` with a simulated network. The receiver:
``endpoints/receiver.py``; what both share: ``endpoints/common.py``.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from endpoints import wire
from endpoints.common import ASSUMED_BAD, GOOD, HALF_PSN, MAX_EVS, Tx
from endpoints.congestion import CongestionConfig, Window
from endpoints.wire import (
    ACK,
    ACK_LEN,
    BTH_LEN,
    DATA,
    OP_ACK,
    OP_PROBE,
    OP_PROBE_REPLY,
    OP_STATUS,
    OP_WRITE,
    PROBE,
    PROBE_LEN,
    PSN_MASK,
    QP_MASK,
    STATUS_LEN,
    psn_diff,
    reverse64,
)
from fabric.plan import EvPath

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SenderConfig:
    """Sender parameters; times in seconds."""

    mtu: int = 1000  # payload bytes per data packet
    window: int = 256  # data packets in flight, at most
    initial_window: int = 16  # the congestion window starts here (endpoints/congestion.py)
    min_window: int = 2  # congestion control never shrinks the window below this
    rate_pps: float | None = None  # pacing; None: as fast as the window allows
    burst: int = 32  # at most this many packets per poll (and the pacing bucket)
    ack_every: int = 4  # ask for an ACK (BTH ack_req) on every n-th data packet (SACK covers the rest)
    rto_initial: float = 0.1
    rto_min: float = 0.05  # Python endpoints on a shared machine stall for milliseconds
    rto_max: float = 1.0
    probe_interval: float = 0.02  # how often each ASSUMED_BAD EV is probed
    ev_min_active: int = 8
    sample_interval: float = 0.01  # time series of delivered bytes
    seed: int = 0  # QP, first PSN
    first_psn: int | None = None  # None: drawn from the seed
    spray: str = "adaptive"  # "adaptive": avoid EVs with recent CE echoes and trims; "rr": round robin
    adapt_half_life: float = 0.02  # an EV's congestion score halves in this time
    adapt_max_skip: int = 16  # an avoided EV is still used once in this many of its turns
    cc_base_rtt: float | None = None  # the network's unloaded RTT; None: the smallest RTT sample
    cc_target_ratio: float = 0.5  # delay target: this fraction of the base RTT ...
    cc_target_min: float = 100e-6  # ... and at least this (docs/transport.md, "Congestion control")
    cc_beta: float = 0.5  # multiplicative decrease per marked, delayed packet acknowledged

    def congestion(self) -> CongestionConfig:
        """The congestion window's parameters."""
        return CongestionConfig(initial_window=float(min(self.initial_window, self.window)),
                                min_window=float(min(self.min_window, self.initial_window, self.window)),
                                max_window=float(self.window), base_rtt=self.cc_base_rtt,
                                target_ratio=self.cc_target_ratio, target_min=self.cc_target_min, beta=self.cc_beta)


@dataclass
class EvStats:
    """One EV of the sender's set: its path, its state and what went over it."""

    path: EvPath
    state: str = GOOD
    failed_at: float | None = None
    good_since: float = float("-inf")  # losses of packets sent before this say nothing new
    sent: int = 0  # data packets, retransmissions included
    retransmits: int = 0
    acked: int = 0
    losses: int = 0  # timeouts and loss NACKs of packets sent on it
    trims: int = 0
    ce: int = 0  # ACKs echoing CE for a data packet sent on it
    skipped: int = 0  # turns passed over in a row (adaptive spraying, docs/transport.md)
    probes: int = 0
    retired: int = 0
    recovered: int = 0


class Sender:
    """The sending side of one transfer.

    Sprays data packets over the GOOD EVs, one per packet, rotating; a loss NACK
    resends the packet and retires the EV it went on (ASSUMED_BAD, probed over its own
    path until a probe is answered; never fewer than ``ev_min_active`` GOOD); a
    retransmission timeout resends the packet and retires nothing (it cannot tell a
    dead data path from dead feedback); a trim NACK resends the packet first and
    halves the congestion window, retiring nothing. Every state change is an event
    (``events``, docs/transport.md).

    Drive it with ``poll(now)`` (returns what to send now) whenever ``next_wakeup()``
    is due or a packet was handed to ``on_packet(data, now)``; ``finished`` tells when
    to stop, ``ok`` whether the receiver verified every byte.
    """

    def __init__(self, data: bytes | bytearray | memoryview, evs: Sequence[EvPath],
                 config: SenderConfig = SenderConfig(), now: float = 0.0,
                 path_names: Mapping[int, str] | None = None) -> None:
        if not evs:
            raise ValueError("sender: the EV set is empty; give EVs (--evs K, a topology, or --ev-list)")
        if len(evs) > MAX_EVS:
            raise ValueError(f"sender: {len(evs)} EVs, at most {MAX_EVS}")
        if len({e.ev for e in evs}) != len(evs):
            raise ValueError("sender: the EV set has the same EV twice")
        if not 0 < config.mtu <= wire.MAX_MTU:
            raise ValueError(f"sender: payload size {config.mtu} outside 1..{wire.MAX_MTU}")
        for name in ("probe_interval", "rto_min", "rto_initial", "sample_interval"):
            if not getattr(config, name) > 0:
                raise ValueError(f"sender: {name} must be more than 0 seconds")
        if config.rate_pps is not None and not config.rate_pps > 0:
            raise ValueError("sender: the pacing rate must be more than 0 packets/s (or none)")
        if config.burst < 1 or config.ack_every < 1 or config.min_window < 1 or config.initial_window < 1:
            raise ValueError("sender: burst, ack_every, initial_window and min_window must be at least 1")
        if config.ev_min_active < 1:
            raise ValueError("sender: ev_min_active must be at least 1 (no GOOD EV: nothing can be sent)")
        if not 0 < config.window <= 0xFFFF:
            raise ValueError(f"sender: window {config.window} outside 1..65535")
        try:
            config.congestion().check()
        except ValueError as exc:
            raise ValueError(f"sender: {exc}") from None
        if config.spray not in ("adaptive", "rr"):
            raise ValueError(f"sender: spray {config.spray!r}: adaptive or rr")
        if not config.adapt_half_life > 0 or config.adapt_max_skip < 1:
            raise ValueError("sender: adapt_half_life must be more than 0 seconds and adapt_max_skip at least 1")
        self.cfg = config
        self.data = memoryview(data).cast("B")
        self.length = len(self.data)
        self.n_packets = -(-self.length // config.mtu)
        self.digest = hashlib.sha256(self.data).digest()
        rng = random.Random(config.seed)
        self.qp = rng.randrange(1, QP_MASK + 1)
        self.first_psn = rng.randrange(0, PSN_MASK + 1)
        if config.first_psn is not None:
            self.first_psn = config.first_psn & PSN_MASK
        self.start = now
        self.state = "opening"  # opening -> sending -> done | failed
        self.error: str | None = None
        self.verdict: int | None = None
        self.finished_at: float | None = None
        self.rqp = 0
        self.rkey = 0
        self.vaddr = 0
        self.evs = {e.ev: EvStats(e) for e in evs}
        self._path_names = dict(path_names or {})  # EV -> its path's switches, for the events
        self._order = [e.ev for e in evs]
        self._pos = {ev: i for i, ev in enumerate(self._order)}
        self._since_ack = 0
        self._good: list[int] = list(self._order)
        self._rr = 0
        self._adapt_until = float("-inf")  # adaptive choice only while some path's score may matter
        # Congestion scores per path (plane, spine): the EVs of one path share its queues.
        # An EV of a plain --ev-list (plane -1) is a path of its own.
        self._path_of = {e.ev: (e.plane, e.spine) if e.plane >= 0 else (-1, e.ev) for e in evs}
        self._scores: dict[tuple[int, int], tuple[float, float]] = {}  # path -> (score, at)
        # Packets: [una, next_idx) were sent; bit i of _acked is packet una + i.
        self.una = 0
        self.next_idx = 0
        self._acked = 0
        self.acked_bytes = 0
        self._inflight: dict[int, tuple[float, int, int]] = {}  # idx -> (sent at, ev, transmission)
        self._timers: deque[tuple[float, int, int]] = deque()  # (sent at, idx, transmission), sent order
        self._lost: deque[int] = deque()  # to retransmit, oldest first
        self._trimmed: deque[int] = deque()  # to retransmit at once (trim NACKs)
        self._lost_set: set[int] = set()
        self._tx_count: dict[int, int] = {}  # idx -> transmissions so far, while waiting to be resent
        self.srtt: float | None = None
        self.rttvar = 0.0
        self.rto = config.rto_initial
        # Congestion window (endpoints/congestion.py): CE echoes, delay and trim NACKs
        # move it; losses are path failures (EVs retired), not congestion.
        self.cc = Window(config.congestion(), now)
        self._ack_rtt: float | None = None  # the RTT sample of the ACK being handled
        self._next_send = now
        self._next_open = now
        self._next_probe = now
        self._probe_seq = 0
        self._probes: dict[int, tuple[int, float]] = {}  # seq -> (ev, sent at)
        self.counts: Counter[str] = Counter()  # packets sent by kind, retransmissions by cause
        self.data_sent = 0  # hot counters are attributes
        self.acks_received = 0
        self.drops: Counter[str] = Counter()  # received packets dropped, by reason
        self.events: list[dict[str, Any]] = []  # EV retirements and recoveries
        self.series: list[tuple[float, int]] = [(0.0, 0)]
        self._next_sample = now + config.sample_interval

    # -- queries --------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    @property
    def ok(self) -> bool:
        return self.state == "done"

    def good_evs(self) -> list[int]:
        return list(self._good)

    def next_wakeup(self) -> float | None:
        """The earliest time ``poll`` has something to do (None: only a packet can help)."""
        if self.finished:
            return None
        times = [self._timers[0][0] + self.rto] if self._timers else []
        if self.state == "opening" or (self.state == "sending" and self.una >= self.n_packets):
            times.append(self._next_open)
        elif self.state == "sending" and self._can_send():
            times.append(self._next_send)
        if self._bad_count():
            times.append(self._next_probe)
        return min(times) if times else None

    def _can_send(self) -> bool:
        return len(self._inflight) < self.cc.cwnd and bool(self._trimmed or self._lost or self._may_send_new())

    def _may_send_new(self) -> bool:
        # New packets stay within a window of the first unacknowledged one, so the
        # receiver's bitmap and its PSN check stay bounded however long a hole lasts.
        return self.next_idx < self.n_packets and self.next_idx < self.una + self.cfg.window

    def _bad_count(self) -> int:
        return len(self.evs) - len(self._good)

    # -- time -----------------------------------------------------------------

    def poll(self, now: float) -> list[Tx]:
        """Timers (retransmission timeouts, probes, OPEN retries) and the packets the
        window and the pacing allow now."""
        out: list[Tx] = []
        if self.finished:
            return out
        self._expire(now)
        if self.state == "opening" or (self.state == "sending" and self.una >= self.n_packets):
            if now >= self._next_open:
                out.extend(self._open_packets())
                self._next_open = now + max(self.rto, self.cfg.rto_min)
        elif self.state == "sending":
            self._send_data(now, out)
        if self._bad_count() and now >= self._next_probe:
            self._send_probes(now, out)
        return out

    def _expire(self, now: float) -> None:
        timers = self._timers
        rto = self.rto
        fired = False
        while timers and timers[0][0] + rto <= now:
            sent_at, idx, n = timers.popleft()
            rec = self._inflight.get(idx)
            if rec is None or rec[2] != n:
                continue  # acked, or declared lost and sent again since
            self._declare_lost(idx, rec[1], "timeout", now)
            fired = True
        if fired:  # back off until an RTT sample says otherwise
            self.rto = min(self.cfg.rto_max, 2 * rto)

    def _send_data(self, now: float, out: list[Tx]) -> None:
        cfg = self.cfg
        budget = cfg.burst
        rate = cfg.rate_pps
        if rate:
            self._next_send = max(self._next_send, now - cfg.burst / rate)
        inflight = self._inflight
        window = self.cc.cwnd
        pack = DATA.pack
        data = self.data
        mtu = cfg.mtu
        trimmed = self._trimmed
        while budget and self._good:
            if len(inflight) >= window or (rate and self._next_send > now):
                break
            # Trimmed packets first, as soon as the window allows: with v1model's
            # trimming after the queue, resending them past a halved window would
            # keep the queue above the trim threshold for ever.
            if trimmed:
                idx = trimmed.popleft()
                self._lost_set.discard(idx)
                if self._is_acked(idx):
                    continue
                cause = "retransmit"
            elif self._lost:
                idx = self._lost.popleft()
                self._lost_set.discard(idx)
                if self._is_acked(idx):
                    continue
                cause = "retransmit"
            elif self._may_send_new():
                idx = self.next_idx
                self.next_idx += 1
                cause = ""
            else:
                break
            if now < self._adapt_until:
                ev = self._adaptive_ev(now)
            else:
                good = self._good
                ev = good[self._rr % len(good)]
                self._rr += 1
            off = idx * mtu
            ln = min(mtu, self.length - off)
            # Every ack_every-th packet asks for an ACK (the receiver sends its feedback
            # over its own rotation of EVs, so the requests need no plane of their own).
            self._since_ack += 1
            ack_req = bool(cause) or idx == self.n_packets - 1 or self._since_ack >= cfg.ack_every
            if ack_req:
                self._since_ack = 0
            header = pack(OP_WRITE, 0, 0xFFFF, self.rqp, (wire.ACK_REQ if ack_req else 0)
                          | ((self.first_psn + idx) & PSN_MASK), self.vaddr + off, self.rkey, ln)
            out.append(Tx(ev, header + data[off:off + ln]))
            n = self._tx_count.pop(idx, 0) + 1 if cause else 1
            inflight[idx] = (now, ev, n)
            self._timers.append((now, idx, n))
            st = self.evs[ev]
            st.sent += 1
            if cause:
                st.retransmits += 1
                self.counts["data_retransmitted"] += 1
            self.data_sent += 1
            budget -= 1
            if rate:
                self._next_send += 1.0 / rate

    def _send_probes(self, now: float, out: list[Tx]) -> None:
        stamp = int(now * 1e9) & 0xFFFFFFFFFFFFFFFF
        for ev in self._order:
            st = self.evs[ev]
            if st.state != ASSUMED_BAD:
                continue
            self._probe_seq = (self._probe_seq + 1) & 0xFFFFFFFF
            self._probes[self._probe_seq] = (ev, now)
            out.append(Tx(ev, wire.probe(OP_PROBE, self.rqp, ev, self._probe_seq, stamp)))
            st.probes += 1
            self.counts["probes_sent"] += 1
        # Replies older than a few intervals are not waited for any more.
        horizon = now - 4 * self.cfg.probe_interval - self.rto
        for seq in [s for s, (_, t) in self._probes.items() if t < horizon]:
            del self._probes[seq]
        self._next_probe = now + self.cfg.probe_interval

    def _open_packets(self) -> list[Tx]:
        """OPEN on up to 4 consecutive GOOD EVs (one per plane when the set interleaves
        planes, as the plan's does): a dead path does not delay the start. The
        receiver answers copies alike."""
        good = self._good
        out = []
        for _ in range(min(4, len(good))):
            ev = good[self._rr % len(good)]
            self._rr += 1
            self.counts["open_sent"] += 1
            out.append(Tx(ev, wire.Open(ev, wire.VERSION, self.qp, self.first_psn, self.length, self.cfg.mtu,
                                        self.cfg.window, self.digest).pack()))
        return out

    # -- packets in -----------------------------------------------------------

    def on_packet(self, data: bytes | memoryview, now: float) -> None:
        """An ACK/NACK, PROBE_REPLY or STATUS from the receiver. Anything malformed,
        for another QP, or acknowledging what was never sent is dropped and counted in
        ``drops``; nothing of a dropped packet is applied."""
        n = len(data)
        if self.finished:
            self.counts["late"] += 1  # answers still on their way when the transfer ended
            return
        if n < BTH_LEN:
            self.drops["truncated"] += 1
            return
        opcode = data[0]
        if opcode == OP_ACK:
            if n < ACK_LEN:
                self.drops["truncated"] += 1
                return
            (_, _, _, qp, w2, aeth, ev, flags, _, base_psn, bitmap) = ACK.unpack_from(data)
            if (qp & QP_MASK) != self.qp:
                self.drops["wrong_qp"] += 1
                return
            if self.state != "sending":
                self.drops["unexpected"] += 1  # an ACK before the transfer was accepted
                return
            if aeth == 0 and bitmap == 0:  # the common case: a plain cumulative ACK
                una = self.una
                cum = una + ((w2 - self.first_psn - una + HALF_PSN) & PSN_MASK) - HALF_PSN
                if una - 1 <= cum < self.next_idx:
                    self.acks_received += 1
                    ce = bool(flags & wire.FLAG_CE)
                    if ce:
                        self._congested(ev, now, "ce")
                    self._ack_rtt = None
                    newly = 0
                    for idx in range(una, cum + 1):
                        newly += self._ack_one(idx, now)
                    self.cc.on_ack(newly, self._ack_rtt, ce, now, self.srtt)
                    self._advance()
                    if now >= self._next_sample:
                        self._sample(now)
                    return
            self._on_ack(w2 & PSN_MASK, aeth >> 24, ev, base_psn & PSN_MASK, reverse64(bitmap), now,
                         bool(flags & wire.FLAG_CE))
        elif opcode == OP_PROBE_REPLY:
            if n < PROBE_LEN:
                self.drops["truncated"] += 1
                return
            (_, _, _, qp, _, ev, _, seq, _) = PROBE.unpack_from(data)
            if (qp & QP_MASK) != self.qp:
                self.drops["wrong_qp"] += 1
                return
            self._on_probe_reply(ev, seq, now)
        elif opcode == OP_STATUS:
            if n < STATUS_LEN:
                self.drops["truncated"] += 1
                return
            st = wire.Status.unpack(data)
            if st.sender_qp != self.qp:
                self.drops["wrong_qp"] += 1
                return
            self._on_status(st, now)
        else:
            self.drops["bad_opcode"] += 1

    def _idx(self, psn: int) -> int:
        """The packet index of a PSN, near the window."""
        return self.una + psn_diff(psn, (self.first_psn + self.una) & PSN_MASK)

    def _on_ack(self, cum_psn: int, syndrome: int, ev: int, base_psn: int, bits: int, now: float,
                ce: bool = False) -> None:
        cum = self._idx(cum_psn)
        base = self._idx(base_psn)
        # Validate everything before applying anything.
        if cum >= self.next_idx or (bits and (base < 0 or base + bits.bit_length() - 1 >= self.next_idx)):
            self.drops["ack_unsent"] += 1
            return
        if cum < self.una - 1 - 0xFFFF or base < self.una - 0xFFFF - 64:
            self.drops["psn_out_of_window"] += 1
            return
        if syndrome not in (wire.SYNDROME_ACK, wire.SYNDROME_NACK_LOSS, wire.SYNDROME_NACK_TRIMMED):
            self.drops["bad_syndrome"] += 1
            return
        if syndrome == wire.SYNDROME_ACK:
            self.acks_received += 1
            if ce:
                self._congested(ev, now, "ce")
        else:
            self.counts["nacks_received" if syndrome == wire.SYNDROME_NACK_LOSS else "trim_nacks_received"] += 1
        self._ack_rtt = None
        newly = 0
        if cum >= self.una:
            for idx in range(self.una, cum + 1):
                newly += self._ack_one(idx, now)
        if syndrome == wire.SYNDROME_ACK:
            while bits:
                low = bits & -bits
                idx = base + low.bit_length() - 1
                bits ^= low
                if idx >= self.una:
                    newly += self._ack_one(idx, now)
        self.cc.on_ack(newly, self._ack_rtt, ce and syndrome == wire.SYNDROME_ACK, now, self.srtt)
        if syndrome != wire.SYNDROME_ACK:
            cause = "trim" if syndrome == wire.SYNDROME_NACK_TRIMMED else "nack"
            guard = self.srtt if self.srtt is not None else 0.0
            while bits:
                low = bits & -bits
                idx = base + low.bit_length() - 1
                bits ^= low
                rec = self._inflight.get(idx)
                if rec is None:
                    continue  # acked, or already waiting for retransmission
                if cause == "nack" and rec[2] > 1 and now - rec[0] < guard:
                    continue  # a resent packet: the NACK is about an earlier transmission
                self._declare_lost(idx, rec[1], cause, now)
        self._advance()
        self._sample(now)

    def _ack_one(self, idx: int, now: float) -> bool:
        """Mark packet ``idx`` (>= una) acknowledged, once: True the first time."""
        bit = 1 << (idx - self.una)
        if self._acked & bit:
            return False
        self._acked |= bit
        self.acked_bytes += min(self.cfg.mtu, self.length - idx * self.cfg.mtu)
        self._tx_count.pop(idx, None)
        rec = self._inflight.pop(idx, None)
        if rec is not None:
            sent_at, ev, n = rec
            self.evs[ev].acked += 1
            if n == 1:  # Karn: no RTT from a retransmitted packet
                self._ack_rtt = now - sent_at
                self._rtt_sample(self._ack_rtt)
        return True

    def _advance(self) -> None:
        acked = self._acked
        if acked & 1:
            t = (acked ^ (acked + 1)).bit_length() - 1
            self.una += t
            self._acked = acked >> t

    def _is_acked(self, idx: int) -> bool:
        return idx < self.una or bool((self._acked >> (idx - self.una)) & 1)

    def _rtt_sample(self, rtt: float) -> None:
        if self.srtt is None:
            self.srtt, self.rttvar = rtt, rtt / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - rtt)
            self.srtt = 0.875 * self.srtt + 0.125 * rtt
        self.rto = min(self.cfg.rto_max, max(self.cfg.rto_min, self.srtt + 4 * self.rttvar))

    def _declare_lost(self, idx: int, ev: int, cause: str, now: float) -> None:
        """Packet ``idx`` (last sent on ``ev``) is lost: resend it; a loss NACK about its
        first transmission (not a timeout, not a trim) retires the EV."""
        sent_at, _, n = self._inflight.pop(idx)
        self._tx_count[idx] = n
        if idx not in self._lost_set:
            (self._trimmed if cause == "trim" else self._lost).append(idx)
            self._lost_set.add(idx)
        self.counts[f"retransmit_{cause}"] += 1
        st = self.evs[ev]
        if cause == "trim":
            st.trims += 1
            self._congested(ev, now, "trim")
            if self.cc.on_trim(now, self.srtt if self.srtt is not None else self.rto):
                self.counts["window_halved"] += 1
            return
        st.losses += 1
        # Only a loss NACK about a packet sent once names this EV's data path: it
        # came back (so some reverse path works) and says the receiver saw later
        # packets but not this one. A NACK about a resent packet may be about any of
        # its transmissions (a NACK sent before the resend arrived), so it blames
        # nothing. A timeout is no evidence against the EV either: the packet or only
        # its feedback may have died, and the feedback went over other paths.
        if cause == "nack" and n == 1 and sent_at >= st.good_since:
            self._retire(ev, cause, now)

    # -- adaptive spraying ------------------------------------------------------

    def _congested(self, ev: int, now: float, why: str) -> None:
        """A CE echo or a trim NACK about a packet sent on ``ev``: the score of its path
        (plane, spine) goes up by one, to at most 2."""
        st = self.evs.get(ev)
        if st is None:
            return  # an echo naming no EV of ours (a plain --ev-list peer, a forgery): nothing to score
        if why == "ce":
            st.ce += 1
            self.counts["ce_echoes"] += 1
        if self.cfg.spray != "adaptive":
            return
        # Capped at 2: a path marked over and over is back at most two half-lives
        # after its last mark.
        path = self._path_of[ev]
        self._scores[path] = (min(2.0, self._score(path, now) + 1.0), now)
        # Past 8 half-lives every score is below 1/256 of its peak: round robin again.
        self._adapt_until = max(self._adapt_until, now + 8 * self.cfg.adapt_half_life)

    def _score(self, path: tuple[int, int], now: float) -> float:
        rec = self._scores.get(path)
        if rec is None:
            return 0.0
        return rec[0] * 0.5 ** ((now - rec[1]) / self.cfg.adapt_half_life)

    def _adaptive_ev(self, now: float) -> int:
        """The next GOOD EV of the rotation whose path's score is under 1/2 (one CE
        echo or trim is forgotten after one half-life); an EV passed over
        ``adapt_max_skip`` turns in a row is taken anyway, so none is starved; when
        every EV is over, plain rotation."""
        good = self._good
        n = len(good)
        cap = self.cfg.adapt_max_skip
        for _ in range(n):
            ev = good[self._rr % n]
            self._rr += 1
            st = self.evs[ev]
            if st.skipped >= cap or self._score(self._path_of[ev], now) < 0.5:
                st.skipped = 0
                return ev
            st.skipped += 1
            self.counts["adaptive_skips"] += 1
        ev = good[self._rr % n]
        self._rr += 1
        self.evs[ev].skipped = 0
        return ev

    # -- EV states ------------------------------------------------------------

    def _retire(self, ev: int, cause: str, now: float) -> None:
        st = self.evs[ev]
        if st.state != GOOD:
            return
        if not self._bad_count():
            self._next_probe = now + self.cfg.probe_interval
        st.state = ASSUMED_BAD
        st.failed_at = now
        st.retired += 1
        self._event(now, ev, "retired", cause)
        good = sum(1 for s in self.evs.values() if s.state == GOOD)
        while good < min(self.cfg.ev_min_active, len(self.evs)):
            # Too few GOOD EVs: the least recently failed comes back first.
            back = min((s for s in self.evs.values() if s.state == ASSUMED_BAD),
                       key=lambda s: (s.failed_at, self._pos[s.path.ev]))
            back.state = GOOD
            back.good_since = now
            good += 1
            self._event(now, back.path.ev, "restored", "ev_min_active")
        self._rebuild_good()

    def _rebuild_good(self) -> None:
        self._good = [ev for ev in self._order if self.evs[ev].state == GOOD]

    def _on_probe_reply(self, ev: int, seq: int, now: float) -> None:
        rec = self._probes.get(seq)
        if rec is None or rec[0] != ev:
            self.drops["bad_probe"] += 1
            return
        del self._probes[seq]
        st = self.evs[ev]
        self.counts["probe_replies"] += 1
        if st.state == ASSUMED_BAD:
            st.state = GOOD
            st.good_since = now
            st.recovered += 1
            self._event(now, ev, "recovered", "probe")
            self._rebuild_good()

    def _event(self, now: float, ev: int, what: str, cause: str) -> None:
        """One state change of ``ev`` (to its present state), as a JSON-ready dict."""
        st = self.evs[ev]
        p = st.path
        path = self._path_names.get(ev) or f"plane {p.plane} spine {p.spine}"
        self.events.append({"t": now - self.start, "ev": ev, "plane": p.plane, "spine": p.spine, "path": path,
                            "event": what, "state": st.state, "cause": cause})
        log.info("t=%.6f EV %#x (%s) %s: %s (%s)", now - self.start, ev, path, what, st.state, cause)

    def _on_status(self, st: wire.Status, now: float) -> None:
        if st.state == wire.STATE_ACCEPTED:
            if self.state == "opening":
                self.rqp, self.rkey, self.vaddr = st.receiver_qp, st.rkey, st.vaddr
                self.state = "sending"
                self._next_send = now
                if self.n_packets == 0:
                    self._next_open = now
            return
        if st.state == wire.STATE_REFUSED:
            if self.state == "opening":
                self._fail(now, f"receiver refused the transfer: {wire.REFUSE_REASONS.get(st.reason, st.reason)}")
            else:
                self.drops["bad_status"] += 1
            return
        if st.state in (wire.STATE_VERIFIED, wire.STATE_CORRUPT) and self.state == "sending":
            if self.una < self.n_packets or self._idx(st.cum_psn) != self.n_packets - 1:
                # Only a verdict on everything acknowledged counts: a forged one cannot
                # end the transfer early, and an honest one that overtook the last ACK
                # comes again in answer to the next OPEN. Counted, not a drop reason.
                self.counts["status_early"] += 1
                return
            self._sample(now, force=True)
            self.verdict = st.state
            if st.state == wire.STATE_VERIFIED:
                self.state = "done"
                self.finished_at = now
            else:
                self._fail(now, "receiver: the SHA-256 of the received bytes differs from the sender's")
            return
        self.drops["bad_status"] += 1

    def _fail(self, now: float, why: str) -> None:
        self.state = "failed"
        self.error = why
        self.finished_at = now

    def _sample(self, now: float, force: bool = False) -> None:
        if force or now >= self._next_sample:
            self.series.append((now - self.start, self.acked_bytes))
            self._next_sample = now + self.cfg.sample_interval

    # -- report ---------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """Everything an experiment needs, as JSON-ready values (docs: README)."""
        end = self.finished_at
        elapsed = (end - self.start) if end is not None else None
        per_plane: Counter[int] = Counter()
        for st in self.evs.values():
            per_plane[st.path.plane] += st.sent
        return {
            "ok": self.ok,
            "error": self.error,
            "bytes": self.length,
            "mtu": self.cfg.mtu,
            "packets": self.n_packets,
            "completion_time_s": elapsed,
            "goodput_bps": (8 * self.length / elapsed) if elapsed else None,
            "packets_sent": self.data_sent,
            "retransmissions": {
                "total": self.counts["data_retransmitted"],
                "timeout": self.counts["retransmit_timeout"],
                "nack": self.counts["retransmit_nack"],
                "trim_nack": self.counts["retransmit_trim"],
            },
            "control": {"acks_received": self.acks_received,
                        **{k: self.counts[k] for k in ("open_sent", "probes_sent", "probe_replies",
                                                       "nacks_received", "trim_nacks_received", "ce_echoes",
                                                       "adaptive_skips", "status_early", "late")}},
            "spray": self.cfg.spray,
            "dropped": dict(self.drops),
            "rto_s": self.rto,
            "window": {"max": self.cfg.window, "now": self.cc.cwnd, "min": self.cc.cwnd_min,
                       "halved": self.counts["window_halved"], "base_rtt_s": self.cc.base_rtt,
                       "reactions": dict(self.cc.counts)},
            "srtt_s": self.srtt,
            "evs_retired": sum(st.retired for st in self.evs.values()),
            "evs_recovered": sum(st.recovered for st in self.evs.values()),
            "ev_events": list(self.events),
            "per_plane_packets": {str(p): n for p, n in sorted(per_plane.items())},
            "per_ev": [{"ev": ev, "plane": st.path.plane, "spine": st.path.spine, "state": st.state,
                        "sent": st.sent, "retransmits": st.retransmits, "acked": st.acked,
                        "losses": st.losses, "trims": st.trims, "ce": st.ce, "probes": st.probes,
                        "retired": st.retired, "recovered": st.recovered}
                       for ev, st in ((e, self.evs[e]) for e in self._order)],
            "delivered_series": [[round(t, 6), b] for t, b in self.series],
        }
