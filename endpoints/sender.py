"""The MRC-lite sender as a pure state machine (no sockets, no clocks).

One transfer = one RDMA-WRITE-style message cut into packets sprayed over the EVs
(docs/transport.md: EV states, what retires and recovers an EV, the events). Time is
passed in (``now``); ``endpoints/io.py`` drives it with sockets and a clock,
``tests/endpoints/simnet.py`` with a simulated network. The receiver:
``endpoints/receiver.py``; what both share: ``endpoints/common.py``.

The sender is put together from parts that each own one concept: its parameters
(``endpoints/sender_config.py``), the EV states and probes (``endpoints/ev_set.py``),
the spraying policy (``endpoints/spray.py``), what is in flight and to resend with
the RTO (``endpoints/retransmit.py``), the congestion window
(``endpoints/congestion.py``) and the report (``endpoints/sender_report.py``). This
module holds the transfer itself: OPEN, the acknowledgement bitmap, what each packet
from the receiver means, the verdict.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from endpoints import events, wire
from endpoints.common import HALF_PSN, MAX_EVS, Tx
from endpoints.congestion import Window
from endpoints.ev_set import EvSet, EvStats
from endpoints.path_blame import condemned, judgement
from endpoints.retransmit import InFlight, RttEstimator
from endpoints.sender_config import SenderConfig
from endpoints.sender_report import sender_report
from endpoints.spray import Spray
from endpoints.wire import (
    ACK,
    ACK_LEN,
    BTH_LEN,
    DATA,
    OP_ACK,
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

__all__ = ["EvStats", "Sender", "SenderConfig"]

_DEFAULTS = SenderConfig()


class Sender:
    """The sending side of one transfer.

    Sprays data packets over the GOOD EVs, one per packet (``endpoints/spray.py``); a
    loss NACK resends the packet; one about a packet whose EV delivered a later packet
    first (a queue's drop, not the path's) may shrink the congestion window (quick
    adapt, ``endpoints/congestion.py``); loss NACKs that stand ``retire_delay`` on the
    EVs of one path, ``retire_after`` of them or more, retire the path's EVs
    (``endpoints/path_blame.py``: ASSUMED_BAD, probed over their own path until a probe
    is answered; never fewer than ``ev_min_active`` GOOD); a retransmission timeout resends the packet
    and retires nothing (it cannot tell a dead data path from dead feedback); a trim NACK resends the packet first
    and shrinks the congestion window, retiring nothing. Every state change is an
    event (``events``, docs/transport.md).

    Drive it with ``poll(now)`` (returns what to send now) whenever ``next_wakeup()``
    is due or a packet was handed to ``on_packet(data, now)``; ``finished`` tells when
    to stop, ``ok`` whether the receiver verified every byte.
    """

    def __init__(self, data: bytes | bytearray | memoryview, evs: Sequence[EvPath],
                 config: SenderConfig = _DEFAULTS, now: float = 0.0,
                 path_names: Mapping[int, str] | None = None) -> None:
        if not evs:
            raise ValueError("sender: the EV set is empty; give EVs (--evs K, a topology, or --ev-list)")
        if len(evs) > MAX_EVS:
            raise ValueError(f"sender: {len(evs)} EVs, at most {MAX_EVS}")
        if len({e.ev for e in evs}) != len(evs):
            raise ValueError("sender: the EV set has the same EV twice")
        config.check()
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
        self.counts: Counter[str] = Counter()  # packets sent by kind, retransmissions by cause
        self.drops: Counter[str] = Counter()  # received packets dropped, by reason
        self.ev_set = EvSet(evs, probe_interval=config.probe_interval, ev_min_active=config.ev_min_active,
                            start=now, path_names=path_names, counts=self.counts, drops=self.drops,
                            on_event=events.sender_hook(path_names))
        self.evs = self.ev_set.evs
        self.events = self.ev_set.events  # EV retirements, recoveries and restorations
        self.spray = Spray(evs, adaptive=config.spray == "adaptive", half_life=config.adapt_half_life,
                           max_skip=config.adapt_max_skip)
        self.flight = InFlight()
        self.rtt = RttEstimator(rto_initial=config.rto_initial, rto_min=config.rto_min, rto_max=config.rto_max,
                                ack_delay=config.ack_delay)
        # Congestion window (endpoints/congestion.py): CE echoes, delay, trim NACKs and
        # loss NACKs (quick adapt) move it; timeouts do not.
        self.cc = Window(config.congestion(), now)
        self._since_ack = 0
        # Packets: [una, next_idx) were sent; bit i of _acked is packet una + i.
        self.una = 0
        self.next_idx = 0
        self._acked = 0
        self.acked_bytes = 0
        self._ack_rtt: float | None = None  # the RTT sample of the ACK being handled
        self._next_send = now
        self._next_open = now
        self.data_sent = 0  # hot counters are attributes
        self.acks_received = 0
        self.series: list[tuple[float, int]] = [(0.0, 0)]
        self._next_sample = now + config.sample_interval
        self._judge_at = float("inf")  # when a path's loss rows are to be judged again (endpoints/path_blame.py)

    # -- queries --------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")

    @property
    def ok(self) -> bool:
        return self.state == "done"

    @property
    def srtt(self) -> float | None:
        return self.rtt.srtt

    @property
    def rto(self) -> float:
        return self.rtt.rto

    def good_evs(self) -> list[int]:
        return list(self.ev_set.good)

    def next_wakeup(self) -> float | None:
        """The earliest time ``poll`` has something to do (None: only a packet can help)."""
        if self.finished:
            return None
        deadline = self.flight.deadline(self.rtt.rto)
        times = [deadline] if deadline is not None else []
        if self.state == "opening" or (self.state == "sending" and self.una >= self.n_packets):
            times.append(self._next_open)
        elif self.state == "sending" and self._can_send():
            times.append(self._next_send)
        if self.ev_set.bad_count():
            times.append(self.ev_set.next_probe)
        if self._judge_at < float("inf"):
            times.append(self._judge_at)
        return min(times) if times else None

    def _can_send(self) -> bool:
        return len(self.flight.inflight) < self.cc.cwnd and (self.flight.has_resend() or self._may_send_new())

    def _may_send_new(self) -> bool:
        # New packets stay within a window of the first unacknowledged one, so the
        # receiver's bitmap and its PSN check stay bounded however long a hole lasts.
        return self.next_idx < self.n_packets and self.next_idx < self.una + self.cfg.window

    # -- time -----------------------------------------------------------------

    def poll(self, now: float) -> list[Tx]:
        """Timers (retransmission timeouts, probes, OPEN retries) and the packets the
        window and the pacing allow now."""
        out: list[Tx] = []
        if self.finished:
            return out
        self._expire(now)
        if now >= self._judge_at:
            self._judge(now)
        if self.state == "opening" or (self.state == "sending" and self.una >= self.n_packets):
            if now >= self._next_open:
                out.extend(self._open_packets())
                self._next_open = now + max(self.rtt.rto, self.cfg.rto_min)
        elif self.state == "sending":
            self._send_data(now, out)
        if self.ev_set.bad_count() and now >= self.ev_set.next_probe:
            out.extend(self.ev_set.probes(now, self.rqp, self.rtt.rto))
        return out

    def _expire(self, now: float) -> None:
        fired = self.flight.expired(now, self.rtt.rto)
        if fired is not None:
            self._declare_lost(*fired, "timeout", now)
            self.rtt.back_off()  # until an RTT sample says otherwise

    def _next_resend(self) -> int | None:
        """The next queued packet to resend that is still unacknowledged; None: none."""
        flight = self.flight
        while flight.has_resend():
            # Trimmed packets first, as soon as the window allows: with v1model's
            # trimming after the queue, resending them past a halved window would
            # keep the queue above the trim threshold for ever.
            idx = flight.next_resend()
            if idx is not None and not self._is_acked(idx):
                return idx
        return None

    def _send_data(self, now: float, out: list[Tx]) -> None:
        cfg = self.cfg
        rate = cfg.rate_pps
        if rate:
            self._next_send = max(self._next_send, now - cfg.burst / rate)
        good = self.ev_set.good
        flight = self.flight
        inflight = flight.inflight
        window = self.cc.cwnd
        if not good or len(inflight) >= window:
            return  # the usual wake-up with the window full: nothing to set up
        budget = cfg.burst
        # New packets stay within a window of the first unacknowledged one (which
        # sending does not move), so the receiver's bitmap and its PSN check stay
        # bounded however long a hole lasts.
        new_limit = min(self.n_packets, self.una + cfg.window)
        last = self.n_packets - 1
        resending = flight.has_resend()
        pack = DATA.pack
        data = self.data
        mtu = cfg.mtu
        tail = self.length - last * mtu  # the last packet's payload
        rqp, rkey, vaddr, psn0 = self.rqp, self.rkey, self.vaddr, self.first_psn
        next_ev = self.spray.next_ev
        sent = flight.sent
        evs = self.evs
        # An ACK request every ack_every-th packet, or every quarter window if sooner:
        # one ACK then releases at most a quarter of the window (docs/transport.md,
        # "Parameters"). Feedback returns over the receiver's own rotation of EVs.
        ack_every = max(1, min(cfg.ack_every, int(window) // 4))
        since = self._since_ack
        n_sent = 0
        while budget:
            if len(inflight) >= window or (rate and self._next_send > now):
                break
            idx = self._next_resend() if resending else None
            resend = idx is not None
            if idx is None:
                resending = False
                idx = self.next_idx
                if idx >= new_limit:
                    break
                self.next_idx = idx + 1
            ev = next_ev(good, now)
            since += 1
            ack_req = resend or idx == last or since >= ack_every
            if ack_req:
                since = 0
            off = idx * mtu
            ln = mtu if idx < last else tail
            header = pack(OP_WRITE, 0, 0xFFFF, rqp, (wire.ACK_REQ if ack_req else 0)
                          | (wire.RESENT if resend else 0) | ((psn0 + idx) & PSN_MASK), vaddr + off, rkey, ln)
            out.append(Tx(ev, header + data[off:off + ln]))
            sent(idx, ev, now, resend)
            evs[ev].sent += 1
            if resend:
                self._count_resend(ev)
            n_sent += 1
            budget -= 1
            if rate:
                self._next_send += 1.0 / rate
        self._since_ack = since
        self.data_sent += n_sent

    def _count_resend(self, ev: int) -> None:
        self.evs[ev].retransmits += 1
        self.counts["data_retransmitted"] += 1

    def _open_packets(self) -> list[Tx]:
        """OPEN on up to 4 consecutive GOOD EVs (one per plane when the set interleaves
        planes, as the plan's does): a dead path does not delay the start. The
        receiver answers copies alike."""
        good = self.ev_set.good
        out = []
        for _ in range(min(4, len(good))):
            ev = self.spray.next_rr(good)
            self.counts["open_sent"] += 1
            out.append(Tx(ev, wire.Open(ev, wire.VERSION, self.qp, self.first_psn, self.length, self.cfg.mtu,
                                        self.cfg.window, self.digest).pack()))
        return out

    # -- packets in -----------------------------------------------------------

    def on_packet(self, data: bytes | memoryview, now: float) -> None:
        """An ACK/NACK, PROBE_REPLY or STATUS from the receiver. Anything malformed,
        for another QP, or acknowledging what was never sent is dropped and counted in
        ``drops``; nothing of a dropped packet is applied."""
        if self.finished:
            self._on_late_packet(data)
            return
        if len(data) < BTH_LEN:
            self.drops["truncated"] += 1
            return
        opcode = data[0]
        if opcode == OP_ACK:
            self._on_ack_packet(data, now)
        elif opcode == OP_PROBE_REPLY:
            self._on_probe_reply_packet(data, now)
        elif opcode == OP_STATUS:
            self._on_status_packet(data, now)
        else:
            self.drops["bad_opcode"] += 1

    def _on_late_packet(self, data: bytes | memoryview) -> None:
        """An answer still on its way when the transfer ended (feedback on another EV
        can overtake it): counted, and a trim NACK of this QP counted apart, so that
        every trim NACK the receiver sent is accounted for; nothing is applied."""
        self.counts["late"] += 1
        if len(data) >= ACK_LEN and data[0] == OP_ACK:
            (_, _, _, qp, _, aeth, *_rest) = ACK.unpack_from(data)
            if (qp & QP_MASK) == self.qp and aeth >> 24 == wire.SYNDROME_NACK_TRIMMED:
                self.counts["trim_nacks_late"] += 1

    def _on_ack_packet(self, data: bytes | memoryview, now: float) -> None:
        if len(data) < ACK_LEN:
            self.drops["truncated"] += 1
            return
        (_, _, _, qp, w2, aeth, ev, flags, _, base_psn, bitmap) = ACK.unpack_from(data)
        if (qp & QP_MASK) != self.qp:
            self.drops["wrong_qp"] += 1
            return
        if self.state != "sending":
            self.drops["unexpected"] += 1  # an ACK before the transfer was accepted
            return
        ce = bool(flags & wire.FLAG_CE)
        late = bool(flags & wire.FLAG_LATE)
        if aeth == 0 and bitmap == 0 and not late and self._on_plain_ack(w2, ev, ce, now):
            return
        self._on_ack(w2 & PSN_MASK, aeth >> 24, ev, base_psn & PSN_MASK, reverse64(bitmap), now, ce, late)

    def _on_plain_ack(self, w2: int, ev: int, ce: bool, now: float) -> bool:
        """The common case, a plain cumulative ACK, on a short path; False: not one
        (the full check decides)."""
        una = self.una
        cum = una + ((w2 - self.first_psn - una + HALF_PSN) & PSN_MASK) - HALF_PSN
        if not una - 1 <= cum < self.next_idx:
            return False
        self.acks_received += 1
        if ce:
            self._congested(ev, now, "ce")
        self._ack_rtt = None
        newly = self._ack_mask((2 << (cum - una)) - 1, now) if cum >= una else 0
        self.cc.on_ack(newly, self._ack_rtt, ce, now, self.rtt.srtt)
        self._advance()
        if now >= self._next_sample:
            self._sample(now)
        return True

    def _on_probe_reply_packet(self, data: bytes | memoryview, now: float) -> None:
        if len(data) < PROBE_LEN:
            self.drops["truncated"] += 1
            return
        (_, _, _, qp, _, ev, _, seq, _) = PROBE.unpack_from(data)
        if (qp & QP_MASK) != self.qp:
            self.drops["wrong_qp"] += 1
            return
        self.ev_set.on_probe_reply(ev, seq, now)

    def _on_status_packet(self, data: bytes | memoryview, now: float) -> None:
        if len(data) < STATUS_LEN:
            self.drops["truncated"] += 1
            return
        st = wire.Status.unpack(data)
        if st.sender_qp != self.qp:
            self.drops["wrong_qp"] += 1
            return
        self._on_status(st, now)

    def _idx(self, psn: int) -> int:
        """The packet index of a PSN, near the window."""
        return self.una + psn_diff(psn, (self.first_psn + self.una) & PSN_MASK)

    def _ack_valid(self, cum: int, syndrome: int, base: int, bits: int) -> bool:
        """Whether an ACK/NACK may be applied; if not, counted under its drop reason."""
        if cum >= self.next_idx or (bits and (base < 0 or base + bits.bit_length() - 1 >= self.next_idx)):
            self.drops["ack_unsent"] += 1
            return False
        if cum < self.una - 1 - 0xFFFF or base < self.una - 0xFFFF - 64:
            self.drops["psn_out_of_window"] += 1
            return False
        if syndrome not in (wire.SYNDROME_ACK, wire.SYNDROME_NACK_LOSS, wire.SYNDROME_NACK_TRIMMED):
            self.drops["bad_syndrome"] += 1
            return False
        return True

    def _on_ack(self, cum_psn: int, syndrome: int, ev: int, base_psn: int, bits: int, now: float,
                ce: bool = False, late: bool = False) -> None:
        cum = self._idx(cum_psn)
        base = self._idx(base_psn)
        if not self._ack_valid(cum, syndrome, base, bits):  # everything checked before anything applied
            return
        is_ack = syndrome == wire.SYNDROME_ACK
        if is_ack:
            self.acks_received += 1
            if ce:
                self._congested(ev, now, "ce")
            if late and ev in self.evs:  # a loss NACK that blamed ``ev`` was spurious: taken back
                self.counts["ev_losses_taken_back"] += 1
                self.ev_set.take_back(ev, now)
        else:
            self.counts["nacks_received" if syndrome == wire.SYNDROME_NACK_LOSS else "trim_nacks_received"] += 1
        self._ack_rtt = None
        una = self.una
        newly = self._ack_mask((2 << (cum - una)) - 1, now) if cum >= una else 0
        if is_ack and bits:
            newly += self._ack_mask(bits << (base - una) if base >= una else bits >> (una - base), now)
        self.cc.on_ack(newly, self._ack_rtt, ce and is_ack, now, self.rtt.srtt)
        if not is_ack:
            self._on_nack(syndrome == wire.SYNDROME_NACK_TRIMMED, base, bits, now)
        self._advance()
        self._sample(now)

    def _on_nack(self, trimmed: bool, base: int, bits: int, now: float) -> None:
        """A loss or trim NACK listing the packets of ``bits`` from ``base``."""
        cause = "trim" if trimmed else "nack"
        guard = self.rtt.srtt if self.rtt.srtt is not None else 0.0
        inflight = self.flight.inflight
        dropped = False
        for idx in _bit_indices(base, bits):
            rec = inflight.get(idx)
            if rec is None:
                continue  # acked, or already waiting for retransmission
            if not trimmed and rec[2] > 1 and now - rec[0] < guard:
                continue  # a resent packet: the NACK is about an earlier transmission
            dropped |= self._declare_lost(idx, rec[1], cause, now)
        if dropped:  # a working path dropped one: a queue that overflowed (quick adapt)
            self.cc.on_loss(now, self._round_trip)

    def _ack_mask(self, mask: int, now: float) -> int:
        """Mark the packets ``una + i`` for every bit ``i`` of ``mask`` acknowledged,
        each once, lowest first (the RTT samples in that order: every packet sent once
        among them, Karn); how many were new. New data restarts the retransmission
        timer (RFC 6298 5.3). One call per ACK rather than per packet: an ACK
        acknowledges up to a window."""
        una = self.una
        acked = self._acked
        new = mask & ~acked
        if not new:
            return 0
        self._acked = acked | new
        self.flight.restart(now)
        low = (new & -new).bit_length() - 1
        top = new.bit_length() - 1
        idxs: range | list[int]
        if new >> low == (2 << (top - low)) - 1:  # one run of packets, the usual case
            idxs = range(una + low, una + top + 1)
        else:
            idxs = _bit_indices(una, new)
        mtu = self.cfg.mtu
        last = self.n_packets - 1
        acked_bytes = len(idxs) * mtu
        if una + top == last:  # the last packet is the shorter one
            acked_bytes -= mtu - (self.length - last * mtu)
        self.acked_bytes += acked_bytes
        answered = self.flight.answered
        evs = self.evs
        sample = self.rtt.sample
        rtt = None
        for idx in idxs:
            rec = answered(idx)
            if rec is None:
                continue
            sent_at, ev, n = rec
            st = evs[ev]
            st.acked += 1
            if n == 1:  # Karn: no RTT from a retransmitted packet (nor any news of its EV)
                if sent_at > st.last_acked_sent:
                    st.last_acked_sent = sent_at
                if sent_at > st.last_loss_sent:
                    st.loss_streak = 0  # a packet sent on it after the losses got through
                rtt = now - sent_at
                sample(rtt)
        if rtt is not None:
            self._ack_rtt = rtt
        return len(idxs)

    @property
    def _round_trip(self) -> float:
        """How long the window's reactions to one overflow last: the smoothed RTT, the
        RTO before there is one."""
        return self.rtt.srtt if self.rtt.srtt is not None else self.rtt.rto

    def _advance(self) -> None:
        acked = self._acked
        if acked & 1:
            t = (acked ^ (acked + 1)).bit_length() - 1
            self.una += t
            self._acked = acked >> t

    def _is_acked(self, idx: int) -> bool:
        return idx < self.una or bool((self._acked >> (idx - self.una)) & 1)

    def _declare_lost(self, idx: int, ev: int, cause: str, now: float) -> bool:
        """Packet ``idx`` (last sent on ``ev``) is lost: resend it; a loss NACK about its
        first transmission (not a timeout, not a trim) counts against the EV. True if
        the loss was a queue's: a packet sent on the same EV after it was acknowledged
        first, so the path works and dropped this one on the way."""
        sent_at, _, n = self.flight.lose(idx, cause == "trim")
        self.counts[f"retransmit_{cause}"] += 1
        st = self.evs[ev]
        if cause == "trim":
            st.trims += 1
            self._congested(ev, now, "trim")
            if self.cc.on_trim(now, self._round_trip):
                self.counts["window_halved"] += 1
            return False
        st.losses += 1
        # Only a loss NACK about a packet sent once names this EV's data path: it
        # came back (so some reverse path works) and says the receiver saw later
        # packets but not this one. A NACK about a resent packet may be about any of
        # its transmissions (a NACK sent before the resend arrived), so it blames
        # nothing. A timeout is no evidence against the EV either: the packet or only
        # its feedback may have died, and the feedback went over other paths.
        # One such loss may still be a packet dropped on a working path (a queue, a
        # starved software switch) or one late by more than the receiver's reordering
        # window, and a switch that waits for a CPU delays every packet of its path: the
        # EVs of a path are retired when the loss rows of its EVs condemn it
        # (endpoints/path_blame.py), a row being broken by the acknowledgement of a
        # packet sent on its EV after the last of them (a path delivers in order: a
        # later packet through means the path works).
        if cause == "nack" and n == 1 and sent_at >= st.good_since:
            if sent_at < st.last_acked_sent:  # a packet sent on it later got through first
                self.counts["ev_losses_forgiven"] += 1
                return True
            if not st.loss_streak:
                st.first_loss_sent = sent_at
            st.loss_streak += 1
            st.last_loss_sent = max(st.last_loss_sent, sent_at)
            if not self._judge_path(ev, now):
                self.counts["ev_losses_forgiven"] += 1
        return False

    def _judge_path(self, ev: int, now: float) -> bool:
        """Retire the EVs of ``ev``'s path if the loss rows of its EVs condemn it now
        (``path_blame.judgement``; which of them: ``path_blame.condemned``); otherwise
        note when to look again. True if it did."""
        evs = self.ev_set.path_evs(ev)
        first, again = judgement((self.evs[e] for e in evs), self.cfg.retire_after, self.cfg.retire_delay, now)
        if first is None:
            self._judge_at = min(self._judge_at, again)
            return False
        for e in condemned(((e, self.evs[e]) for e in evs), first):
            self.ev_set.retire(e, "nack", now)
        return True

    def _judge(self, now: float) -> None:
        """The time to look again at the paths with loss rows came: each is judged
        (``_judge_path``), and the next time noted."""
        self._judge_at = float("inf")
        for evs in self.ev_set.paths():
            if any(self.evs[e].loss_streak for e in evs):
                self._judge_path(evs[0], now)

    def _congested(self, ev: int, now: float, why: str) -> None:
        """A CE echo or a trim NACK about a packet sent on ``ev``: counted, and scored
        by the spraying policy."""
        st = self.evs.get(ev)
        if st is None:
            return  # an echo naming no EV of ours (a plain --ev-list peer, a forgery): nothing to score
        if why == "ce":
            st.ce += 1
            self.counts["ce_echoes"] += 1
        self.spray.congested(ev, now)

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
            self._on_verdict(st, now)
            return
        self.drops["bad_status"] += 1

    def _on_verdict(self, st: wire.Status, now: float) -> None:
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
        """Everything an experiment needs, as JSON-ready values (docs/endpoints.md)."""
        return sender_report(self)


def _bit_indices(base: int, bits: int) -> list[int]:
    """The indices ``base + i`` for every bit ``i`` set in ``bits``, lowest first."""
    out = []
    while bits:
        low = bits & -bits
        out.append(base + low.bit_length() - 1)
        bits ^= low
    return out
