"""The sender's EV set and its state machine: GOOD and ASSUMED_BAD, the floor
``ev_min_active``, probes over an ASSUMED_BAD EV's own path and the events every
state change reports (docs/transport.md, "EV states").

Why apart from the sender: what makes an EV bad or good again is the transport's
failure promise (a dead path costs a few retransmissions, a healthy one is never
blamed); keeping it in one small class keeps those rules in one place. The sender
decides *when* an EV is to blame (``retire``); this class applies the state change,
keeps the floor and probes.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from endpoints import wire
from endpoints.common import ASSUMED_BAD, GOOD, Tx
from endpoints.path_blame import PathKey, path_key
from endpoints.wire import OP_PROBE
from fabric.plan import EvPath

log = logging.getLogger("endpoints.sender")


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
    loss_streak: int = 0  # loss NACKs in a row with none of its later packets acknowledged
    first_loss_sent: float = float("inf")  # when the first of those packets was sent (while loss_streak > 0)
    last_loss_sent: float = float("-inf")  # when the last of those packets was sent
    last_acked_sent: float = float("-inf")  # when the latest of its acknowledged packets was sent
    trims: int = 0
    ce: int = 0  # ACKs echoing CE for a data packet sent on it
    probes: int = 0
    retired: int = 0
    recovered: int = 0
    retired_by: str = ""  # the cause of its last retirement while ASSUMED_BAD


class EvSet:
    """The EVs of one transfer, in the order given; ``good`` is the GOOD ones in that
    order (what spraying rotates over). ``counts`` is the sender's counter (probes
    sent, replies) and ``drops`` its drop reasons."""

    def __init__(self, evs: Sequence[EvPath], *, probe_interval: float, ev_min_active: int, start: float,
                 path_names: Mapping[int, str] | None, counts: Counter[str], drops: Counter[str],
                 on_event: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.evs = {e.ev: EvStats(e) for e in evs}
        self.order = [e.ev for e in evs]
        self._pos = {ev: i for i, ev in enumerate(self.order)}
        self.good: list[int] = list(self.order)
        self._paths: dict[PathKey, list[int]] = {}  # path -> its EVs, in the order given
        for e in evs:
            self._paths.setdefault(path_key(e), []).append(e.ev)
        self._names = dict(path_names or {})  # EV -> its path's switches, for the events
        self._probe_interval = probe_interval
        self._min_active = min(ev_min_active, len(self.evs))
        self._start = start
        self.counts = counts
        self.drops = drops
        self.events: list[dict[str, Any]] = []  # retirements, recoveries, restorations
        self._on_event = on_event  # also told each event (endpoints/events.py publishes it)
        self.next_probe = start
        self._probe_seq = 0
        self._probes: dict[int, tuple[int, float]] = {}  # seq -> (ev, sent at)

    def path_evs(self, ev: int) -> list[int]:
        """The EVs of ``ev``'s path (``endpoints/path_blame.py``), ``ev`` among them."""
        return self._paths[path_key(self.evs[ev].path)]

    def paths(self) -> list[list[int]]:
        """The EVs of each path, path by path."""
        return list(self._paths.values())

    def bad_count(self) -> int:
        return len(self.evs) - len(self.good)

    def retire(self, ev: int, cause: str, now: float) -> None:
        """``ev`` becomes ASSUMED_BAD (if GOOD); the floor may bring another back."""
        st = self.evs[ev]
        if st.state != GOOD:
            return
        if not self.bad_count():
            self.next_probe = now + self._probe_interval
        st.state = ASSUMED_BAD
        st.failed_at = now
        st.loss_streak = 0
        st.retired += 1
        st.retired_by = cause
        self._event(now, ev, "retired", cause)
        good = sum(1 for s in self.evs.values() if s.state == GOOD)
        while good < self._min_active:
            # Too few GOOD EVs: the least recently failed comes back first.
            back = min((s for s in self.evs.values() if s.state == ASSUMED_BAD),
                       key=lambda s: (s.failed_at or 0.0, self._pos[s.path.ev]))
            back.state = GOOD
            back.good_since = now
            back.loss_streak = 0
            good += 1
            self._event(now, back.path.ev, "restored", "ev_min_active")
        self._rebuild_good()

    def take_back(self, ev: int, now: float) -> None:
        """A loss NACK that counted against ``ev`` was spurious (the packet arrived
        late): its loss streak restarts, and if loss NACKs retired it (nothing else
        marks an EV bad) it is GOOD again (event ``restored``, cause ``late``)."""
        st = self.evs[ev]
        st.loss_streak = 0
        if st.state == ASSUMED_BAD and st.retired_by == "nack":
            st.state = GOOD
            st.good_since = now
            st.retired_by = ""
            self._event(now, ev, "restored", "late")
            self._rebuild_good()

    def _rebuild_good(self) -> None:
        self.good = [ev for ev in self.order if self.evs[ev].state == GOOD]

    def probes(self, now: float, rqp: int, rto: float) -> list[Tx]:
        """One PROBE on each ASSUMED_BAD EV, over its own path (sent on the EV itself)."""
        out: list[Tx] = []
        stamp = int(now * 1e9) & 0xFFFFFFFFFFFFFFFF
        for ev in self.order:
            st = self.evs[ev]
            if st.state != ASSUMED_BAD:
                continue
            self._probe_seq = (self._probe_seq + 1) & 0xFFFFFFFF
            self._probes[self._probe_seq] = (ev, now)
            out.append(Tx(ev, wire.probe(OP_PROBE, rqp, ev, self._probe_seq, stamp)))
            st.probes += 1
            self.counts["probes_sent"] += 1
        # Replies older than a few intervals are not waited for any more.
        horizon = now - 4 * self._probe_interval - rto
        for seq in [s for s, (_, t) in self._probes.items() if t < horizon]:
            del self._probes[seq]
        self.next_probe = now + self._probe_interval
        return out

    def on_probe_reply(self, ev: int, seq: int, now: float) -> None:
        """A PROBE_REPLY: the EV's path works, an ASSUMED_BAD EV is GOOD again."""
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
            st.loss_streak = 0
            st.recovered += 1
            self._event(now, ev, "recovered", "probe")
            self._rebuild_good()

    def _event(self, now: float, ev: int, what: str, cause: str) -> None:
        """One state change of ``ev`` (to its present state), as a JSON-ready dict."""
        st = self.evs[ev]
        p = st.path
        path = self._names.get(ev) or f"plane {p.plane} spine {p.spine}"
        self.events.append({"t": now - self._start, "ev": ev, "plane": p.plane, "spine": p.spine, "path": path,
                            "event": what, "state": st.state, "cause": cause})
        if self._on_event is not None:
            self._on_event(self.events[-1])
        log.info("t=%.6f EV %#x (%s) %s: %s (%s)", now - self._start, ev, path, what, st.state, cause)

    def report(self) -> list[dict[str, Any]]:
        """Per EV, in the order given, JSON-ready."""
        return [{"ev": ev, "plane": st.path.plane, "spine": st.path.spine, "state": st.state,
                 "sent": st.sent, "retransmits": st.retransmits, "acked": st.acked,
                 "losses": st.losses, "trims": st.trims, "ce": st.ce, "probes": st.probes,
                 "retired": st.retired, "recovered": st.recovered}
                for ev, st in ((e, self.evs[e]) for e in self.order)]
