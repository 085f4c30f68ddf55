"""The RoCE baseline's requester: one RC queue pair as a pure state machine.

What MRC-lite is measured against (docs/transport.md, "The RoCEv2 baseline"): the
whole transfer on one path (the QP's EV, ``endpoints/ecmp.py``), RDMA WRITE messages
cut into First / Middle... / Last (or Only) packets in PSN order, go-back-N on a
NAK or a local ACK timeout with a retry count, and DCQCN's rate
(``endpoints/dcqcn.py``). Time is passed in (``now``); ``endpoints/io.py`` drives it
with sockets and a clock as it drives MRC-lite's ``Sender``, the tests with a
simulated network. The responder: ``endpoints/roce_receiver.py``.

Connection set-up reuses MRC-lite's OPEN and STATUS (version ``wire.VERSION_ROCE``):
the part RoCE leaves to its connection manager (the QPs, the first PSN, rkey and
buffer address, and here the SHA-256 the responder checks at the end).

Packet indices (``idx``, 0-based) inside; PSNs only on the wire.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import Any

from endpoints import wire
from endpoints.common import Tx
from endpoints.dcqcn import Dcqcn
from endpoints.roce_config import RoceSenderConfig
from endpoints.roce_report import sender_report
from endpoints.wire import (
    ACK,
    ACK_LEN,
    BTH,
    BTH_LEN,
    DATA,
    OP_ACK,
    OP_CNP,
    OP_STATUS,
    OP_WRITE,
    OP_WRITE_FIRST,
    OP_WRITE_LAST,
    OP_WRITE_MIDDLE,
    PKEY,
    PSN_MASK,
    QP_MASK,
    STATUS_LEN,
    psn_diff,
)

RETRY_EXCEEDED = "retry count exceeded"


def write_opcode(pos: int, last: int) -> int:
    """The opcode of packet ``pos`` of a message whose last packet is ``last``."""
    if last == 0:
        return OP_WRITE
    if pos == 0:
        return OP_WRITE_FIRST
    return OP_WRITE_LAST if pos == last else OP_WRITE_MIDDLE


class RoceSender:
    """The requester of one transfer on one QP, on EV ``ev`` throughout.

    States: ``opening`` (OPEN until STATUS accepts), ``sending``, ``verifying`` (every
    PSN acknowledged, OPEN again until the verdict), then ``done`` or ``error`` (the
    QP's error state: retries exhausted, a refusal, a digest mismatch; ``error``
    says why). Drive it with ``poll(now)`` whenever ``next_wakeup()`` is due or a
    packet was handed to ``on_packet(data, now)``.
    """

    def __init__(self, data: bytes | bytearray | memoryview, ev: int, config: RoceSenderConfig | None = None,
                 now: float = 0.0) -> None:
        cfg = config if config is not None else RoceSenderConfig()
        cfg.check()
        if not 0 <= ev <= 0xFFFF:
            raise ValueError(f"roce: EV {ev} outside 0..65535")
        self.cfg = cfg
        self.ev = ev
        self.data = memoryview(data).cast("B")
        self.length = len(self.data)
        self.n_packets = -(-self.length // cfg.mtu)
        self.per_message = cfg.message_size // cfg.mtu
        self.digest = hashlib.sha256(self.data).digest()
        rng = random.Random(cfg.seed)
        self.qp = rng.randrange(1, QP_MASK + 1)
        self.first_psn = rng.randrange(0, PSN_MASK + 1) if cfg.first_psn is None else cfg.first_psn & PSN_MASK
        self.start = now
        self.state = "opening"
        self.error: str | None = None
        self.verdict: int | None = None
        self.finished_at: float | None = None
        self.rqp = self.rkey = self.vaddr = 0
        self.una = 0  # the oldest packet not acknowledged
        self.nxt = 0  # the next packet to send (rewound by go-back-N)
        self.highest = 0  # one past the highest packet ever sent
        self.retries = 0  # retries since the acknowledged PSN last moved
        self.cc = Dcqcn(cfg.dcqcn, now)
        self._next_send = now
        self._next_open = now
        self._timer = now  # the local ACK timer: (re)armed on progress and on every retry
        self._progress_at = now  # the acknowledged PSN last moved (or sending began)
        self.longest_stall = 0.0
        self.connected_at: float | None = None  # the responder accepted the OPEN
        self.counts: Counter[str] = Counter()
        self.drops: Counter[str] = Counter()
        self.acked_bytes = 0
        self.series: list[tuple[float, int]] = [(0.0, 0)]
        self.rate_series: list[tuple[float, float]] = [(0.0, self.rate)]
        self._next_sample = now + cfg.sample_interval

    # -- queries --------------------------------------------------------------

    @property
    def finished(self) -> bool:
        return self.state in ("done", "error")

    @property
    def ok(self) -> bool:
        return self.state == "done"

    @property
    def rate(self) -> float:
        """The rate the packets are paced at, bits per second (RC; the line rate with cc none)."""
        return self.cc.rate if self.cfg.cc == "dcqcn" else self.cfg.dcqcn.line_rate

    def psn(self, idx: int) -> int:
        return (self.first_psn + idx) & PSN_MASK

    def good_evs(self) -> list[int]:
        return [self.ev]

    def next_wakeup(self) -> float | None:
        if self.finished:
            return None
        if self.state != "sending":
            return self._next_open
        times = [self._timer + self.cfg.ack_timeout] if self.una < self.highest else []
        if self.nxt < self.n_packets and self.nxt < self.una + self.cfg.window:
            times.append(self._next_send)
        return min(times) if times else None

    # -- time -----------------------------------------------------------------

    def poll(self, now: float) -> list[Tx]:
        out: list[Tx] = []
        if self.finished:
            return out
        if self.state != "sending":
            if now >= self._next_open:
                self.counts["open_sent"] += 1
                out.append(Tx(self.ev, wire.Open(self.ev, wire.VERSION_ROCE, self.qp, self.first_psn, self.length,
                                                 self.cfg.mtu, self.cfg.window, self.digest).pack()))
                self._next_open = now + self.cfg.ack_timeout
            return out
        if self.una < self.highest and now >= self._timer + self.cfg.ack_timeout:
            self.counts["timeouts"] += 1
            self._retry(self.una, now)
            if self.finished:
                return out
        if self.cfg.cc == "dcqcn":
            self.cc.advance(now)
        self._send(now, out)
        self._sample(now)
        return out

    def _send(self, now: float, out: list[Tx]) -> None:
        cfg = self.cfg
        budget = cfg.burst
        self._next_send = max(self._next_send, now - budget * 8 * (cfg.mtu + wire.DATA_HDR_LEN) / self.rate)
        while budget and self.nxt < self.n_packets and self.nxt < self.una + cfg.window and self._next_send <= now:
            idx = self.nxt
            payload = self._packet(idx)
            out.append(Tx(self.ev, payload))
            if self.una == idx == self.highest:
                self._timer = now  # the first packet outstanding arms the timer
            if idx < self.highest:
                self.counts["resent"] += 1
            self.nxt += 1
            self.highest = max(self.highest, self.nxt)
            self.counts["data_sent"] += 1
            budget -= 1
            self._next_send += 8 * len(payload) / self.rate
            if cfg.cc == "dcqcn":
                self.cc.on_sent(len(payload))

    def _packet(self, idx: int) -> bytes:
        """Packet ``idx`` as it leaves: BTH (+ RETH on a message's first) + payload."""
        cfg = self.cfg
        msg, pos = divmod(idx, self.per_message)
        last = min(self.per_message, self.n_packets - msg * self.per_message) - 1
        opcode = write_opcode(pos, last)
        off = idx * cfg.mtu
        ln = min(cfg.mtu, self.length - off)
        ack_req = (pos == last or (idx + 1) % cfg.ack_every == 0 or idx + 1 == self.una + cfg.window
                   or idx + 1 == self.n_packets)
        w2 = (wire.ACK_REQ if ack_req else 0) | self.psn(idx)
        if pos == 0:
            msg_off = msg * cfg.message_size
            header = DATA.pack(opcode, 0, PKEY, self.rqp, w2, self.vaddr + msg_off, self.rkey,
                               min(cfg.message_size, self.length - msg_off))
        else:
            header = BTH.pack(opcode, 0, PKEY, self.rqp, w2)
        return header + self.data[off:off + ln]

    def _retry(self, idx: int, now: float) -> None:
        """Go back to packet ``idx`` and resend everything from it (go-back-N), as the
        retry of a NAK or a timeout; past ``retry_count`` retries without progress the
        QP goes to the error state."""
        if self.retries >= self.cfg.retry_count:
            self._fail(now, f"{RETRY_EXCEEDED} ({self.cfg.retry_count} retries without progress, stuck at PSN "
                            f"{self.psn(self.una)}): the QP is in the error state")
            return
        self.retries += 1
        self.counts["retries"] += 1
        self.counts["retries_most_in_row"] = max(self.counts["retries_most_in_row"], self.retries)
        if idx < self.nxt:
            self.counts["rewinds"] += 1
        self.nxt = idx
        self._timer = now
        self._next_send = min(self._next_send, now)

    # -- packets in -----------------------------------------------------------

    def on_packet(self, data: bytes | memoryview, now: float) -> None:
        """An ACK, NAK, CNP or STATUS from the responder; anything malformed, for
        another QP or acknowledging what was never sent is dropped and counted."""
        if self.finished:
            self.counts["late"] += 1
            return
        if len(data) < BTH_LEN:
            self.drops["truncated"] += 1
            return
        opcode = data[0]
        qp = int.from_bytes(data[5:8], "big")
        if opcode == OP_CNP:
            if qp != self.qp:
                self.drops["wrong_qp"] += 1
            elif len(data) < wire.CNP_LEN:
                self.drops["truncated"] += 1
            else:
                self.counts["cnps_received"] += 1
                if self.cfg.cc == "dcqcn":
                    self.cc.on_cnp(now)
                    self.rate_series.append((now - self.start, self.cc.rate))
        elif opcode == OP_ACK:
            self._on_ack_packet(data, qp, now)
        elif opcode == OP_STATUS:
            self._on_status_packet(data, now)
        else:
            self.drops["bad_opcode"] += 1

    def _on_ack_packet(self, data: bytes | memoryview, qp: int, now: float) -> None:
        if len(data) < ACK_LEN:
            self.drops["truncated"] += 1
            return
        if qp != self.qp:
            self.drops["wrong_qp"] += 1
            return
        if self.state != "sending":
            self.drops["unexpected"] += 1
            return
        (_, _, _, _, w2, aeth, *_rest) = ACK.unpack_from(data)
        syndrome = aeth >> 24
        idx = self.una + psn_diff(w2 & PSN_MASK, self.psn(self.una))
        if syndrome == wire.SYNDROME_ACK:
            if not self.una - 1 <= idx < self.highest:
                self.drops["ack_unsent" if idx >= self.highest else "psn_out_of_window"] += 1
                return
            self.counts["acks_received"] += 1
            self._acknowledge(idx + 1, now)
        elif syndrome == wire.SYNDROME_NAK_PSN_SEQUENCE:
            # The responder expects PSN idx: everything before it arrived.
            if not self.una - self.cfg.window <= idx < self.highest:
                self.drops["ack_unsent" if idx >= self.highest else "psn_out_of_window"] += 1
                return
            if idx < self.una:  # overtaken by an ACK of later PSNs: the gap it names is filled
                self.counts["naks_stale"] += 1
                return
            self.counts["naks_received"] += 1
            self._acknowledge(idx, now)
            if not self.finished:
                self._retry(idx, now)
        else:
            self.drops["bad_syndrome"] += 1

    def _acknowledge(self, upto: int, now: float) -> None:
        """Every packet before ``upto`` arrived."""
        if upto <= self.una:
            return
        mtu = self.cfg.mtu
        self.acked_bytes = min(upto * mtu, self.length)
        self._stalled(now)
        self.una = upto
        self.retries = 0
        self._timer = now
        self._progress_at = now
        self.nxt = max(self.nxt, upto)  # what a rewind would resend but already arrived
        if self.una >= self.n_packets:
            self.state = "verifying"
            self._next_open = now
            self._sample(now, force=True)

    def _stalled(self, now: float) -> None:
        self.longest_stall = max(self.longest_stall, now - self._progress_at)

    def _on_status_packet(self, data: bytes | memoryview, now: float) -> None:
        if len(data) < STATUS_LEN:
            self.drops["truncated"] += 1
            return
        st = wire.Status.unpack(data)
        if st.sender_qp != self.qp:
            self.drops["wrong_qp"] += 1
            return
        if st.state == wire.STATE_ACCEPTED and self.state == "opening":
            self.rqp, self.rkey, self.vaddr = st.receiver_qp, st.rkey, st.vaddr
            self.connected_at = now
            self.state = "sending" if self.n_packets else "verifying"
            self._next_send = self._timer = self._progress_at = now
        elif st.state == wire.STATE_REFUSED and self.state == "opening":
            self._fail(now, f"receiver refused the transfer: {wire.REFUSE_REASONS.get(st.reason, st.reason)}")
        elif st.state in (wire.STATE_VERIFIED, wire.STATE_CORRUPT) and self.state == "verifying":
            self.verdict = st.state
            if st.state == wire.STATE_VERIFIED:
                self.state = "done"
                self.finished_at = now
            else:
                self._fail(now, "receiver: the SHA-256 of the received bytes differs from the sender's")
        elif st.state == wire.STATE_ACCEPTED or st.state in (wire.STATE_VERIFIED, wire.STATE_CORRUPT):
            self.counts["status_early"] += 1  # a copy, or a verdict that overtook the last ACK
        else:
            self.drops["bad_status"] += 1

    def _fail(self, now: float, why: str) -> None:
        if self.state == "sending":
            self._stalled(now)
        self.state = "error"
        self.error = why
        self.finished_at = now
        self._sample(now, force=True)

    def fail(self, now: float, why: str) -> None:
        """Give up (the caller's time limit): the QP ends in the error state."""
        if not self.finished:
            self._fail(now, why)

    def _sample(self, now: float, force: bool = False) -> None:
        if force or now >= self._next_sample:
            t = now - self.start
            self.series.append((t, self.acked_bytes))
            if self.cfg.cc == "dcqcn":
                self.rate_series.append((t, self.cc.rate))
            self._next_sample = now + self.cfg.sample_interval

    # -- report ---------------------------------------------------------------

    def report(self) -> dict[str, Any]:
        """Everything an experiment needs, as JSON-ready values (docs/endpoints.md)."""
        return sender_report(self)
