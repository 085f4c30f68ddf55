"""MRC-lite sender and receiver as pure state machines (no sockets, no clocks).

Why pure: the transport's behaviour (spraying, retiring and recovering EVs, trimming,
retransmission) must be tested deterministically against a simulated network, and
the same code must run against real sockets. So time is passed in (``now``, seconds,
any monotonic origin), packets come in through ``on_packet`` and go out as the
return value of ``poll`` / ``on_packet``; ``endpoints/io.py`` drives them with sockets
and a clock, ``tests/endpoints/simnet.py`` with a simulated network.

One transfer = one RDMA-WRITE-style message of ``length`` bytes cut into packets of
``mtu`` payload bytes; packet ``i`` has PSN ``first_psn + i`` (mod 2**24) and carries
its final address ``vaddr + i * mtu`` (RETH), so the receiver places it whatever the
order of arrival. A transfer starts with OPEN (length, payload size, window, SHA-256 of
the whole transfer) answered by STATUS (receiver QP, rkey, buffer address), and ends
with STATUS VERIFIED (the receiver's digest matched) or CORRUPT. Packet formats:
docs/packet-formats.md; the wire codecs: ``endpoints/wire.py``.

Packet indices (``idx``, 0-based, unbounded) are used inside; PSNs only on the wire.
"""

from __future__ import annotations

import hashlib
import logging
import random
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from controller.plan import EvPath

from endpoints import wire
from endpoints.wire import (
    ACK,
    ACK_LEN,
    BTH_LEN,
    DATA,
    DATA_HDR_LEN,
    IMMDT_LEN,
    OP_ACK,
    OP_OPEN,
    OP_PROBE,
    OP_PROBE_REPLY,
    OP_STATUS,
    OP_WRITE,
    OP_WRITE_IMM,
    OPEN_LEN,
    PROBE,
    PROBE_LEN,
    PSN_MASK,
    QP_MASK,
    STATUS_LEN,
    psn_diff,
    reverse64,
)

log = logging.getLogger(__name__)

GOOD = "good"
ASSUMED_BAD = "assumed_bad"
MAX_EVS = 256
_HALF = 1 << 23


class Tx(NamedTuple):
    """A packet to send: UDP source port ``ev``, UDP payload ``payload``, to ``peer``
    (the sender's packets all go to its one receiver: ``peer`` is None)."""

    ev: int
    payload: bytes
    peer: Any = None


# ---- sender ------------------------------------------------------------------


@dataclass(frozen=True)
class SenderConfig:
    """Sender parameters; times in seconds."""

    mtu: int = 1000  # payload bytes per data packet
    window: int = 256  # data packets in flight, at most
    initial_window: int = 16  # the congestion window starts here, doubling each RTT up to window
    min_window: int = 8  # trim NACKs never shrink the congestion window below this
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
        # Congestion window: from initial_window up, one packet per ACKed packet (slow
        # start) until the first trim NACK, then one per window of ACKs; halved by a
        # trim NACK (once per RTT). Trims are the fabric's congestion signal; losses
        # are path failures (EVs retired), not congestion, and leave it alone.
        self.cwnd = float(min(config.initial_window, config.window))
        self.ssthresh = float(config.window)
        self._cwnd_hold = now
        self.cwnd_min = float(config.window)
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
        return len(self._inflight) < self.cwnd and bool(self._trimmed or self._lost or self._may_send_new())

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
        window = self.cwnd
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
            (_, _, _, qp, w2, aeth, ev, _, _, base_psn, bitmap) = ACK.unpack_from(data)
            if (qp & QP_MASK) != self.qp:
                self.drops["wrong_qp"] += 1
                return
            if self.state != "sending":
                self.drops["unexpected"] += 1  # an ACK before the transfer was accepted
                return
            if aeth == 0 and bitmap == 0:  # the common case: a plain cumulative ACK
                una = self.una
                cum = una + ((w2 - self.first_psn - una + _HALF) & PSN_MASK) - _HALF
                if una - 1 <= cum < self.next_idx:
                    self.acks_received += 1
                    for idx in range(una, cum + 1):
                        self._ack_one(idx, now)
                    self._advance()
                    if now >= self._next_sample:
                        self._sample(now)
                    return
            self._on_ack(w2 & PSN_MASK, aeth >> 24, ev, base_psn & PSN_MASK, reverse64(bitmap), now)
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

    def _on_ack(self, cum_psn: int, syndrome: int, ev: int, base_psn: int, bits: int, now: float) -> None:
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
        else:
            self.counts["nacks_received" if syndrome == wire.SYNDROME_NACK_LOSS else "trim_nacks_received"] += 1
        if cum >= self.una:
            for idx in range(self.una, cum + 1):
                self._ack_one(idx, now)
        if syndrome == wire.SYNDROME_ACK:
            while bits:
                low = bits & -bits
                idx = base + low.bit_length() - 1
                bits ^= low
                if idx >= self.una:
                    self._ack_one(idx, now)
        else:
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

    def _ack_one(self, idx: int, now: float) -> None:
        """Mark packet ``idx`` (>= una) acknowledged, once."""
        bit = 1 << (idx - self.una)
        if self._acked & bit:
            return
        self._acked |= bit
        self.acked_bytes += min(self.cfg.mtu, self.length - idx * self.cfg.mtu)
        self._tx_count.pop(idx, None)
        rec = self._inflight.pop(idx, None)
        if self.cwnd < self.cfg.window:
            self.cwnd = min(float(self.cfg.window),
                            self.cwnd + (1.0 if self.cwnd < self.ssthresh else 1.0 / self.cwnd))
        if rec is not None:
            sent_at, ev, n = rec
            self.evs[ev].acked += 1
            if n == 1:  # Karn: no RTT from a retransmitted packet
                self._rtt_sample(now - sent_at)

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
            if now >= self._cwnd_hold:
                self.cwnd = self.ssthresh = max(float(min(self.cfg.min_window, self.cfg.window)), self.cwnd / 2)
                self.cwnd_min = min(self.cwnd_min, self.cwnd)
                self._cwnd_hold = now + (self.srtt if self.srtt is not None else self.rto)
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
                                                       "nacks_received", "trim_nacks_received",
                                                       "status_early", "late")}},
            "dropped": dict(self.drops),
            "rto_s": self.rto,
            "window": {"max": self.cfg.window, "now": self.cwnd, "min": self.cwnd_min,
                       "halved": self.counts["window_halved"]},
            "srtt_s": self.srtt,
            "evs_retired": sum(st.retired for st in self.evs.values()),
            "evs_recovered": sum(st.recovered for st in self.evs.values()),
            "ev_events": list(self.events),
            "per_plane_packets": {str(p): n for p, n in sorted(per_plane.items())},
            "per_ev": [{"ev": ev, "plane": st.path.plane, "spine": st.path.spine, "state": st.state,
                        "sent": st.sent, "retransmits": st.retransmits, "acked": st.acked,
                        "losses": st.losses, "trims": st.trims, "probes": st.probes,
                        "retired": st.retired, "recovered": st.recovered}
                       for ev, st in ((e, self.evs[e]) for e in self._order)],
            "delivered_series": [[round(t, 6), b] for t, b in self.series],
        }


# ---- receiver ----------------------------------------------------------------


@dataclass(frozen=True)
class ReceiverConfig:
    """Receiver parameters; times in seconds."""

    max_bytes: int = 1 << 30  # largest transfer accepted (its buffer is allocated whole)
    expect_bytes: int | None = None  # accept only transfers of exactly this length
    max_window: int = 0xFFFF
    max_connections: int = 16
    nack_delay: float = 0.005  # a hole older than this is NACKed (reordering is normal)
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
        """The UDP source port (so the path back) of the next feedback packet: the
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
            "qp": self.qp, "sender_qp": self.sender_qp, "peer": str(self.peer), "bytes": self.length,
            "mtu": self.mtu, "verdict": {wire.STATE_ACCEPTED: "incomplete", wire.STATE_VERIFIED: "verified",
                                          wire.STATE_CORRUPT: "corrupt"}[self.state],
            "opened_at_s": self.opened_at,  # the series' times are seconds after this
            "completion_time_s": elapsed,
            "goodput_bps": (8 * self.length / elapsed) if elapsed else None,
            "received_bytes": self.received_bytes,
            "counts": {"packets": self.packets, "bytes": self.received_bytes, "acks": self.acks, **self.counts},
            "per_ev_packets": {str(ev): n for ev, n in sorted(self.ev_packets.items())},
            "delivered_series": [[round(t, 6), b] for t, b in self.series],
        }


class Receiver:
    """The receiving side: any number of transfers (up to ``max_connections``) on one
    port, each with its own QP and buffer.

    ``on_packet(data, now, peer, ev, tclass)`` takes one UDP payload with its source
    address, source port (the EV) and IPv6 traffic class; it and ``poll(now)`` return
    the ACKs, NACKs, probe replies and STATUS packets to send. Malformed or hostile
    packets are dropped and counted in ``drops`` and never touch a buffer.
    """

    def __init__(self, config: ReceiverConfig = ReceiverConfig()) -> None:
        for name in ("nack_delay", "ack_delay"):
            if getattr(config, name) < 0:
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
        times = []
        for c in self.conns.values():
            if c.ack_due is not None:
                times.append(c.ack_due)
            if c.holes:
                times.append(c.holes[0][0] + self.cfg.nack_delay)
            if c.renacks:
                times.append(c.renacks[0][0] + self.cfg.renack_interval)
        return min(times) if times else None

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
        if reason:
            self.counts["refused"] += 1
            log.info("refused a transfer from %s (sender QP %#x): %s", peer, o.sender_qp,
                        wire.REFUSE_REASONS[reason])
            return [Tx(ev, wire.Status(ev, o.sender_qp, 0, wire.STATE_REFUSED, reason, 0, 0, 0).pack(), peer)]
        qp = self._rng.randrange(1, QP_MASK + 1)
        while qp in self.conns:
            qp = self._rng.randrange(1, QP_MASK + 1)
        c = Connection(qp, peer, o.sender_qp, o.first_psn, o.length, o.mtu, o.window, o.digest,
                       rkey=self._rng.getrandbits(32), vaddr=self._rng.randrange(1, 1 << 40) << 12,
                       opened_at=now, buf=bytearray(o.length), n_packets=-(-o.length // o.mtu))
        c.next_sample = now + cfg.sample_interval
        self.conns[qp] = c
        self._by_sender[(peer, o.sender_qp)] = qp
        log.info("transfer from %s: %d bytes in %d packets, QP %#x", peer, o.length, c.n_packets, qp)
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
        hdr = DATA_HDR_LEN + (IMMDT_LEN if opcode == OP_WRITE_IMM else 0)
        if n < hdr:
            self.drops["truncated"] += 1
            return []
        (_, _, _, qp, w2, vaddr, rkey, dma_len) = DATA.unpack_from(data)
        c = self.conns.get(qp & QP_MASK)
        if c is None:
            self.drops["wrong_qp"] += 1
            return []
        if c.peer != peer:
            self.drops["wrong_peer"] += 1
            return []
        if rkey != c.rkey:
            self.drops["bad_rkey"] += 1
            return []
        d = ((w2 - c.first_psn - c.cum + _HALF) & PSN_MASK) - _HALF  # psn_diff(psn, psn of cum)
        idx = c.cum + d
        if d > c.window or d <= -c.window or idx >= c.n_packets:
            self.drops["psn_out_of_window"] += 1
            return []
        if vaddr < c.vaddr or vaddr + dma_len > c.vaddr + c.length:
            self.drops["bad_address"] += 1
            return []
        off = idx * c.mtu
        if vaddr != c.vaddr + off or dma_len != min(c.mtu, c.length - off):
            self.drops["address_mismatch"] += 1  # each PSN has one place in the message
            return []
        present = n - hdr
        trimmed = present == 0 and dma_len > 0
        if not trimmed and present != dma_len:
            self.drops["truncated" if present < dma_len else "bad_length"] += 1
            return []
        c.last_ev = ev
        c.last_idx = idx
        if ev not in c.ev_packets:
            c.learn_ev(ev)
        c.ev_packets[ev] += 1
        cum = c.cum
        if trimmed:  # every trimmed arrival is counted, so the switches' trim counters tie with it
            counts = c.counts
            counts["trimmed"] += 1
            if (tclass >> 2) == self.cfg.trim_dscp:
                counts["trimmed_marked"] += 1
        if idx <= cum or (c.bits >> (idx - cum - 1)) & 1:
            c.counts["trimmed_duplicates" if trimmed else "duplicates"] += 1
            return [self._ack(c, ev)]
        if trimmed:
            counts["trim_nacks"] += 1
            self._note_holes(c, idx, now)
            return [Tx(c.back_ev(), wire.ack(c.sender_qp, c.psn(cum), wire.SYNDROME_NACK_TRIMMED, ev, c.psn(idx), 1),
                       c.peer)]
        c.buf[off:off + dma_len] = data[hdr:hdr + dma_len]
        c.packets += 1
        c.received_bytes += dma_len
        if idx > c.highest:
            if idx > c.highest + 1:
                self._note_holes(c, idx, now)
            c.highest = idx
        else:  # a first arrival below the highest: it was overtaken (reordering, or a resend)
            c.counts["out_of_order"] += 1
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
        if cum == c.n_packets - 1:
            return self._complete(c, now, ev, self._ack_bytes(c, ev))
        if w2 & wire.ACK_REQ:
            if not bits:  # in order: no bitmap
                c.ack_due = None
                c.acks += 1
                psn = (c.first_psn + cum) & PSN_MASK
                return [Tx(c.back_ev(), ACK.pack(OP_ACK, 0, 0xFFFF, c.sender_qp, psn, 0, ev, 0, 0,
                                                 (psn + 1) & PSN_MASK, 0), c.peer)]
            return [self._ack(c, ev)]
        if c.ack_due is None:
            c.ack_due = now + self.cfg.ack_delay
        return []

    def _note_holes(self, c: Connection, idx: int, now: float) -> None:
        if idx > c.highest:
            holes = c.holes
            for j in range(c.highest + 1, idx):
                holes.append((now, j))
            c.highest = idx

    def _ack(self, c: Connection, ev: int) -> Tx:
        """ACK echoing ``ev``, on the connection's next feedback EV."""
        return Tx(c.back_ev(), self._ack_bytes(c, ev), c.peer)

    def _ack_bytes(self, c: Connection, ev: int) -> bytes:
        """ACK: the cumulative PSN, and a bitmap of the 64 PSNs that end with the
        packet answered (or start after the cumulative PSN), so every packet is
        reported by its own ACK however far it is ahead of a hole."""
        c.ack_due = None
        c.acks += 1
        base = max(c.cum + 1, c.last_idx - 63)
        bits = (c.bits >> (base - c.cum - 1)) & 0xFFFFFFFFFFFFFFFF
        return wire.ack(c.sender_qp, c.psn(c.cum), wire.SYNDROME_ACK, ev, c.psn(base), bits)

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

    def poll(self, now: float) -> list[Tx]:
        """Delayed ACKs, and NACKs for holes older than ``nack_delay``."""
        out: list[Tx] = []
        cfg = self.cfg
        for c in self.conns.values():
            if c.ack_due is not None and now >= c.ack_due:
                out.append(self._ack(c, c.last_ev))
            if c.state != wire.STATE_ACCEPTED:
                continue
            lost: list[int] = []
            for queue, wait in ((c.holes, cfg.nack_delay), (c.renacks, cfg.renack_interval)):
                while queue and queue[0][0] + wait <= now:
                    _, j = queue.popleft()
                    if not c.has(j):
                        lost.append(j)
            if not lost:
                continue
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
        return out

    def report(self) -> dict[str, Any]:
        return {"connections": [c.report() for c in self.conns.values()], "dropped": dict(self.drops),
                "refused": self.counts["refused"]}
