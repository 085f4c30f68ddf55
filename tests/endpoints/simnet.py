"""A simulated network for the transport's state machines: deterministic under a seed.

Why a simulation: loss, reordering, duplication, dead paths and trimming must be
produced on demand and exactly repeatable, and the outcome checked packet by packet.
The network here knows only what a fabric does to a packet on the path its EV names
(delay, loss, copies, trimming); the sender and receiver are the real state machines
of ``endpoints/transport.py``, driven by simulated time exactly as ``endpoints/io.py``
drives them with a clock.

Trimming is done to the bytes as docs/packet-formats.md says a switch does it: the
payload after RETH is cut and the traffic class carries the trim DSCP (what the NIC
hands to the host).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from typing import Any

from fabric.plan import EvPath
from endpoints.transport import Receiver, ReceiverConfig, Sender, SenderConfig
from endpoints.wire import DATA_HDR_LEN, OP_WRITE, OP_WRITE_FIRST, OP_WRITE_IMM, OP_WRITE_LAST, OP_WRITE_MIDDLE

# Data opcodes: MRC-lite's WRITE Only (and with immediate); the RoCE baseline's First/Middle/Last too
DATA_OPCODES = frozenset((OP_WRITE, OP_WRITE_IMM, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST))

SENDER_ADDR = "fd00:0:0:1::1"
TRIM_DSCP = 62
ECT0, CE = 0b10, 0b11  # ECN field values (RFC 3168)


@dataclass
class Sent:
    t: float
    ev: int
    payload: bytes
    tclass: int | None = None  # the class the endpoint asked for (None: its socket's own)


@dataclass
class SimNet:
    """Paths are named by EV; each direction of each EV has the same rules.

    ``dead(t, ev)``: every packet on that EV sent at ``t`` is lost (both directions);
    ``dead_fwd`` / ``dead_back``: the same for one direction only (the EV of a packet
    back is the receiver's source port: its own path, which may differ from the
    sender's path of the same EV).
    ``trim(t, ev, rng)``: the data packet sent at ``t`` on ``ev`` is trimmed.
    """

    seed: int = 1
    base_delay: float = 100e-6  # one way
    path_skew: float = 0.0  # extra delay of EV number k: k * path_skew
    jitter: float = 0.0  # uniform extra delay per packet (reorders)
    delay: Callable[[int], float] = lambda ev: 0.0  # extra delay of every packet on ``ev`` (both directions)
    loss: float = 0.0  # random loss, every packet, both directions
    duplicate: float = 0.0  # probability that a packet arrives twice
    dead: Callable[[float, int], bool] = lambda t, ev: False
    dead_back: Callable[[float, int], bool] = lambda t, ev: False  # receiver -> sender only
    dead_fwd: Callable[[float, int], bool] = lambda t, ev: False  # sender -> receiver only
    # when a packet sent at t on ev (sender -> receiver) goes on: t, unless something on
    # its path holds it (a switch that stopped running delivers it, in order, once it runs)
    held_fwd: Callable[[float, int], float] = lambda t, ev: t
    trim: Callable[[float, int, random.Random], bool] = lambda t, ev, rng: False
    ce: Callable[[float, int], bool] = lambda t, ev: False  # the data packet sent at t on ev arrives with CE
    # the packet with these bytes sent at t is lost (back: receiver -> sender); the tests pick packets by PSN
    lose: Callable[[float, bytes, bool], bool] = lambda t, payload, back: False
    rng: random.Random = field(init=False)
    counts: dict[str, int] = field(default_factory=lambda: {"lost": 0, "dead": 0, "duplicated": 0,
                                                            "trimmed": 0, "reordered": 0, "ce": 0})

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def carry(self, t: float, ev: int, payload: bytes, index: int, back: bool = False
              ) -> list[tuple[float, bytes, int]]:
        """Arrivals (time, bytes, traffic class) of one packet sent at ``t`` on ``ev``."""
        if self.dead(t, ev) or (self.dead_back(t, ev) if back else self.dead_fwd(t, ev)) or self.lose(t, payload, back):
            self.counts["dead"] += 1
            return []
        if self.rng.random() < self.loss:
            self.counts["lost"] += 1
            return []
        tclass = ECT0  # the endpoints send ECN-capable
        if payload[0] == OP_WRITE and self.trim(t, ev, self.rng):
            payload = payload[:DATA_HDR_LEN]
            tclass = TRIM_DSCP << 2 | ECT0
            self.counts["trimmed"] += 1
        elif payload[0] in DATA_OPCODES and not back and self.ce(t, ev):
            tclass = CE
            self.counts["ce"] += 1
        copies = 2 if self.rng.random() < self.duplicate else 1
        if copies == 2:
            self.counts["duplicated"] += 1
        start = t if back else self.held_fwd(t, ev)
        return [(start + self.base_delay + self.delay(ev) + index * self.path_skew + self.rng.random() * self.jitter,
                 payload, tclass)
                for _ in range(copies)]


@dataclass
class Run:
    sender: Sender
    receiver: Receiver
    to_receiver: list[Sent]
    to_sender: list[Sent]  # as delivered (arrival time)
    delivered_to_sender: list[Sent]
    min_good: int
    end: float

    @property
    def conn(self):  # the receiver's one connection
        (c,) = self.receiver.conns.values()
        return c


def run_transfer(data: bytes, evs: list[EvPath], net: SimNet, *, sender_cfg: SenderConfig = SenderConfig(),  # noqa: B008 — a frozen dataclass: one shared default is safe
                 receiver_cfg: ReceiverConfig = ReceiverConfig(), limit: float = 30.0,  # noqa: B008 — a frozen dataclass: one shared default is safe
                 hook: Callable[[float, Sender, Receiver], None] | None = None,
                 path_names: dict[int, str] | None = None) -> Run:
    """Run one transfer to its end (or ``limit`` seconds of simulated time);
    ``hook(t, sender, receiver)`` is called at every step (tests inject packets there)."""
    sender = Sender(data, evs, sender_cfg, now=0.0, path_names=path_names)
    receiver = Receiver(receiver_cfg)
    return Run(sender, receiver, *drive(sender, receiver, net, {e.ev: k for k, e in enumerate(evs)}, limit, hook))


def drive(sender: Any, receiver: Any, net: SimNet, index: dict[int, int], limit: float = 30.0,
          hook: Callable[[float, Any, Any], None] | None = None
          ) -> tuple[list[Sent], list[Sent], list[Sent], int, float]:
    """Run ``sender`` and ``receiver`` (MRC-lite's, or the RoCE baseline's: the same
    interface) over ``net`` to the sender's end or ``limit`` seconds; ``index``: each
    EV's position (its path's extra delay). What was sent each way, what the sender
    was handed, the fewest GOOD EVs seen, the time it ended."""
    queue: list[tuple[float, int, str, int, bytes, int]] = []  # (t, seq, to, ev, bytes, tclass)
    seq = 0
    sent_rx: list[Sent] = []
    sent_tx: list[Sent] = []
    delivered: list[Sent] = []
    last_rx_psn = -1
    min_good = len(sender.good_evs())
    t = 0.0
    stuck = 0

    def transmit(to: str, now: float, ev: int, payload: bytes) -> None:
        nonlocal seq
        for at, body, tclass in net.carry(now, ev, payload, index.get(ev, 0), back=to == "sender"):
            seq += 1
            heapq.heappush(queue, (at, seq, to, ev, body, tclass))

    while not sender.finished and t <= limit:
        if hook is not None:
            hook(t, sender, receiver)
        for tx in sender.poll(t):
            sent_rx.append(Sent(t, tx.ev, tx.payload))
            transmit("receiver", t, tx.ev, tx.payload)
        for tx in receiver.poll(t):
            sent_tx.append(Sent(t, tx.ev, tx.payload))
            transmit("sender", t, tx.ev, tx.payload)
        min_good = min(min_good, len(sender.good_evs()))
        wakeups = [w for w in (sender.next_wakeup(), receiver.next_wakeup()) if w is not None]
        if queue:
            wakeups.append(queue[0][0])
        if not wakeups:
            break
        nxt = max(min(wakeups), t)
        stuck = stuck + 1 if nxt == t else 0
        assert stuck < 10_000, f"simulation does not advance at t={t}"
        t = nxt
        while queue and queue[0][0] <= t:
            _, _, to, ev, body, tclass = heapq.heappop(queue)
            if to == "receiver":
                if body[0] in DATA_OPCODES:
                    idx = (int.from_bytes(body[9:12], "big") - sender.first_psn) & 0xFFFFFF
                    if idx < last_rx_psn:
                        net.counts["reordered"] += 1
                    last_rx_psn = max(last_rx_psn, idx)
                for tx in receiver.on_packet(body, t, SENDER_ADDR, ev, tclass):
                    sent_tx.append(Sent(t, tx.ev, tx.payload, tx.tclass))
                    transmit("sender", t, tx.ev, tx.payload)
            else:
                delivered.append(Sent(t, ev, body))
                sender.on_packet(body, t)
            min_good = min(min_good, len(sender.good_evs()))
    return sent_rx, sent_tx, delivered, min_good, t
