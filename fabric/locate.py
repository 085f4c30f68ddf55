"""Which link is broken, from the paths that failed and those that work (pure).

Why here: ``mrcctl locate`` and ``mrcctl guard`` name a broken link from the reports
of many senders (EV events) or from a probe sweep; both give paths (the fabric
model's, fabric/paths.py) that failed or worked. A link is a suspect when a failed
path crosses it; a working path crossing it contradicts it (a working path proves
every link on it). The broken links are a smallest set of suspects that no working
path contradicts and that together cross every failed path (a hitting set, found
greedily: the suspect explaining most failures still unexplained first). One broken
link is found exactly when it is the only uncontradicted link every failed path
crosses.

Paths alone cannot tell apart two links that every observed path crosses together
(in a fabric of two leaves, a spine's two links: every path over the spine crosses
both). Counters can: a cut link's packets are sent at one end and never received at
the other. ``loss`` (link -> packets sent onto it, packets received from it, in the
direction that lost the most) breaks such ties.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabric.paths import paths
from fabric.topology import Topology, TopologyError

MIN_LOST = 3  # packets sent onto a link and not received before counters count as evidence


@dataclass(frozen=True)
class Observation:
    """A path that was seen to fail (``ok`` False) or to work, its cables and what was seen."""

    links: frozenset[str]
    ok: bool
    what: str = ""


@dataclass(frozen=True)
class Suspect:
    """A link on at least one failed path: which failed paths cross it (``explains``),
    which working ones (``contradicted``), and its counters (``sent``, ``received``:
    the direction that lost the most; 0, 0 when not read)."""

    link: str
    explains: tuple[str, ...]
    contradicted: tuple[str, ...]
    sent: int = 0
    received: int = 0

    @property
    def lost(self) -> int:
        return self.sent - self.received

    @property
    def counters_dead(self) -> bool:
        """The counters say the link lost what was sent onto it (most of it)."""
        return self.lost >= MIN_LOST and self.received * 2 <= self.sent


@dataclass(frozen=True)
class Verdict:
    """What ``locate`` concludes: ``exact`` (one link explains every failure and no
    working path contradicts it, or the counters pick it among such links), the
    greedy ``cover`` (links that together explain every failure they can), every
    suspect ranked, and the failed paths no uncontradicted link explains."""

    exact: str | None
    cover: tuple[str, ...]
    ranked: tuple[Suspect, ...]
    failed: int
    working: int
    unexplained: tuple[str, ...] = field(default=())
    tied: tuple[str, ...] = field(default=())  # links the paths cannot tell apart from ``exact`` or each other


def counter_loss(tx_ab: int, rx_ab: int, tx_ba: int, rx_ba: int) -> tuple[int, int]:
    """(sent, received) of the direction of a cable that lost more: A's transmissions
    onto it against B's receptions from it, and the other way."""
    return max((tx_ab, rx_ab), (tx_ba, rx_ba), key=lambda d: d[0] - d[1])


def _rank_key(s: Suspect) -> tuple[bool, int, bool, int, int, str]:
    return (bool(s.contradicted), -len(s.explains), not s.counters_dead, -s.lost, len(s.contradicted), s.link)


def suspects(observations: Iterable[Observation],
             loss: Mapping[str, tuple[int, int]] | None = None) -> tuple[list[Suspect], list[Observation]]:
    """Every link of a failed path, with its evidence, ranked; and the failed paths."""
    obs = list(observations)
    failed = [o for o in obs if not o.ok]
    working = [o for o in obs if o.ok]
    loss = loss or {}
    names = sorted({k for o in failed for k in o.links})
    out = [Suspect(k, tuple(o.what for o in failed if k in o.links), tuple(o.what for o in working if k in o.links),
                   *loss.get(k, (0, 0))) for k in names]
    return sorted(out, key=_rank_key), failed


def _cover(clean: Sequence[Suspect], failed: Sequence[Observation]) -> tuple[list[str], list[Observation]]:
    """Greedy hitting set over the uncontradicted suspects."""
    left = list(failed)
    chosen: list[str] = []
    pool = list(clean)
    while left and pool:
        best = min(pool, key=lambda s: (-sum(1 for o in left if s.link in o.links), not s.counters_dead, -s.lost,
                                        s.link))
        hit = [o for o in left if best.link in o.links]
        if not hit:
            break
        chosen.append(best.link)
        left = [o for o in left if best.link not in o.links]
        pool.remove(best)
    return chosen, left


def locate(observations: Iterable[Observation], loss: Mapping[str, tuple[int, int]] | None = None) -> Verdict:
    """The link or links whose failure explains the failed paths and none of the working ones."""
    obs = list(observations)
    ranked, failed = suspects(obs, loss)
    clean = [s for s in ranked if not s.contradicted]
    cover, left = _cover(clean, failed)
    everywhere = [s for s in clean if failed and len(s.explains) == len(failed)]
    exact: str | None = None
    tied: tuple[str, ...] = ()
    if len(everywhere) == 1:
        exact = everywhere[0].link
    elif everywhere:
        dead = [s for s in everywhere if s.counters_dead]
        tied = tuple(s.link for s in everywhere)
        if len(dead) == 1:
            exact = dead[0].link
    if cover:  # the cover leads the ranking, in its order
        first = {k: i for i, k in enumerate(cover)}
        ranked = sorted(ranked, key=lambda s: (s.link not in first, first.get(s.link, 0), _rank_key(s)))
    return Verdict(exact, tuple(cover), tuple(ranked), len(failed), len(obs) - len(failed),
                   tuple(o.what for o in left), tied)


def from_events(topo: Topology, events: Iterable[Mapping[str, object]]) -> list[Observation]:
    """The paths the EV events of senders (endpoints/events.py) say failed or work.

    Per (host, peer) pair that reported, each EV of the pair (the model's paths): its
    last state in ``events`` is ASSUMED_BAD (or ERROR): failed; otherwise it carried
    the transfer without blame: working. A restoration by the floor
    (``ev_min_active``) says nothing about the path and is ignored; a pair that
    reported nothing gives no evidence."""
    last: dict[tuple[str, str], dict[int, str]] = {}
    for e in events:
        if e.get("kind", "ev") != "ev" or e.get("cause") == "ev_min_active":
            continue
        pair = (str(e.get("host")), str(e.get("peer")))
        ev = e.get("ev")
        if isinstance(ev, int):
            last.setdefault(pair, {})[ev] = str(e.get("new"))
    out: list[Observation] = []
    for (src, dst), states in sorted(last.items()):
        try:
            a, b = topo.host(src), topo.host(dst)
        except TopologyError:
            continue
        for p in paths(topo, a, b):
            bad = states.get(p.ev) in ("ASSUMED_BAD", "ERROR")
            out.append(Observation(frozenset(p.links), not bad, f"{src}->{dst} EV {p.ev:#06x}"))
    return out


__all__ = ["MIN_LOST", "Observation", "Suspect", "Verdict", "counter_loss", "from_events", "locate", "suspects"]
