"""When loss NACKs condemn a path: the rule that retires EVs (docs/transport.md,
"What retires an EV").

Why apart from the sender: it is the transport's failure promise in one place. The
EVs the address plan puts on one (plane, spine) go over the same links, so they die
together, and they stall together: a software switch that waits for a CPU delays
every packet of its EVs, in order, for tens of milliseconds on a loaded machine, and
the receiver NACKs them once they are later than its reordering window.

A loss NACK about a packet sent once on an EV starts or extends that EV's row of
losses; the row is broken when a packet sent on the EV after its last loss is
acknowledged (a path delivers in order: it works), or when a NACKed packet arrives
after all (a LATE ACK). The path is condemned, and its EVs retired, when the rows of
its EVs hold ``retire_after`` losses or more and the first of them was sent
``retire_delay`` ago or more: a dead path delivers nothing, so its rows stand and it is
condemned ``retire_delay`` after its first loss, whichever of its EVs carried it; a
path that only stalled for less than that delivers its packets, and breaks its rows,
first. Pooling the rows of a path's EVs is what keeps the wait from slowing the
retirement down: the path carries a packet every few milliseconds where one of its
EVs carries one every few tens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from endpoints.common import GOOD
from fabric.plan import EvPath

if TYPE_CHECKING:
    from endpoints.ev_set import EvStats

PathKey = tuple[int, int]


def path_key(e: EvPath) -> PathKey:
    """The path an EV goes over: its (plane, spine); an EV of a plain ``--ev-list``
    (plane -1, no known path) is a path of its own."""
    return (e.plane, e.spine) if e.plane >= 0 else (-1, e.ev)


def rows_of(evs: Iterable[EvStats]) -> tuple[int, float]:
    """The losses in the rows of a path's GOOD EVs, and when the first of their
    packets was sent (inf: no row)."""
    count = 0
    first = float("inf")
    for st in evs:
        if st.loss_streak and st.state == GOOD:
            count += st.loss_streak
            first = min(first, st.first_loss_sent)
    return count, first


def judgement(evs: Iterable[EvStats], retire_after: int, retire_delay: float,
              now: float) -> tuple[float | None, float]:
    """Whether a path's rows condemn it now: (the send time of its first loss if they
    do, else None; when to look again if they may later without another loss NACK,
    else inf)."""
    count, first = rows_of(evs)
    if count < retire_after:
        return None, float("inf")
    if now >= first + retire_delay:  # the same sum as the time to look again
        return first, float("inf")
    return None, first + retire_delay


def condemned(evs: Iterable[tuple[int, EvStats]], first: float) -> list[int]:
    """The EVs a condemned path retires, of its ``(ev, stats)``: the GOOD ones with a
    row, and those of which nothing sent since the path's first loss (sent at
    ``first``) was acknowledged, unless a probe or a late packet made them GOOD since."""
    return [ev for ev, st in evs
            if st.state == GOOD and (st.loss_streak or (st.last_acked_sent < first and st.good_since <= first))]
