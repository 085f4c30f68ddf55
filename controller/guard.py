"""The guard's decisions: deny a located link fabric-wide, give it back once it works.

Why apart from its loop: what the guard decides must not depend on a clock or on
I/O, so that its thresholds and its hysteresis are tested in simulated time. The
loop around it (controller/ops_cli.py, ``mrcctl guard``) reads the event log, denies
and undenies (controller/repair.py), probes, and writes each action to the log.

The rules (docs/mrcctl.md, "guard"):

- a link is denied when, among the EV events of the last ``window`` seconds, the
  localization (fabric/locate.py) names it and at least ``k`` ASSUMED_BAD reports
  from at least ``min_hosts`` different hosts cross it; when paths cannot tell it
  from another link (a tie), the guard waits up to ``tie_wait`` seconds for the
  links' counters to break the tie (``waiting`` names the links whose counters it
  wants), then denies each of the tied links (the broken one is among them); a tie
  one of whose links is denied already calls for nothing more;
- never more than ``max_share`` of a plane's links are denied at once (a link that
  would pass it is refused, and the refusal logged);
- a denied link is probed; it is given back when its probes have answered for
  ``hold`` seconds without a failure in between (one failed probe starts the count
  again); reports older than the give-back do not count against it again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fabric.locate import Verdict, from_events, locate
from fabric.paths import find_link, links
from fabric.topology import Topology


@dataclass(frozen=True)
class GuardConfig:
    k: int = 3  # ASSUMED_BAD reports crossing the link
    min_hosts: int = 2  # from at least this many hosts
    window: float = 10.0  # seconds of events the localization looks at
    hold: float = 5.0  # seconds of answered probes before a denied link is given back
    max_share: float = 0.25  # of a plane's links (fabric and NIC cables) denied at most
    tie_wait: float = 1.0  # seconds a tie waits for counters before all its links are denied

    def check(self) -> None:
        if self.k < 1 or self.min_hosts < 1:
            raise ValueError("guard: K and the number of hosts must be 1 or more")
        if not (self.window > 0 and self.hold >= 0 and self.tie_wait >= 0 and math.isfinite(self.window)
                and math.isfinite(self.hold) and math.isfinite(self.tie_wait)):
            raise ValueError("guard: the window must be more than 0 seconds and the hold time 0 or more")
        if not 0 <= self.max_share <= 1:
            raise ValueError("guard: the share of a plane's links is 0..1")


@dataclass(frozen=True)
class Action:
    """What the guard decided at ``t``: ``deny``, ``undeny`` or ``refuse`` (a denial the
    share limit forbids), with the evidence."""

    action: str
    link: str
    t: float
    evidence: dict[str, Any]

    def record(self, dry_run: bool) -> dict[str, Any]:
        """The line the guard writes to the event log."""
        return {"kind": "guard", "t": self.t, "action": self.action, "link": self.link, "dry_run": dry_run,
                **self.evidence}


@dataclass
class _Denied:
    since: float
    answered_since: float | None = None  # probes answered without a failure since then


@dataclass
class Guard:
    topo: Topology
    cfg: GuardConfig = field(default_factory=GuardConfig)
    denied: dict[str, _Denied] = field(default_factory=dict)
    given_back: dict[str, float] = field(default_factory=dict)  # link -> when it was undenied
    refused: set[str] = field(default_factory=set)
    waiting: tuple[str, ...] = ()  # tied links whose counters would tell the broken one
    _tie_since: float | None = None

    def __post_init__(self) -> None:
        self.cfg.check()
        self._plane_links: dict[int, int] = {}
        for k in links(self.topo):
            if k.kind in ("fabric", "nic"):
                self._plane_links[k.plane] = self._plane_links.get(k.plane, 0) + 1

    def adopt(self, names: Iterable[str], now: float) -> None:
        """Links denied before the guard started (the state file's): probed, given back like its own."""
        for name in names:
            self.denied.setdefault(find_link(self.topo, name).name, _Denied(now))

    def _limit(self, plane: int) -> int:
        return math.floor(self.cfg.max_share * self._plane_links.get(plane, 0))

    def _denied_in(self, plane: int) -> int:
        return sum(1 for k in self.denied if find_link(self.topo, k).plane == plane)

    def on_events(self, events: Iterable[Mapping[str, Any]], now: float,
                  loss: Mapping[str, tuple[int, int]] | None = None) -> list[Action]:
        """The denials the EV events of the last ``window`` seconds call for."""
        recent = [e for e in events if e.get("kind", "ev") == "ev" and now - self.cfg.window <= float(e["t"]) <= now]
        verdict = locate(from_events(self.topo, recent), loss)
        named = self._named(verdict, now)
        out: list[Action] = []
        for name in named:
            if name in self.denied:
                continue
            reports = [e for e in recent if name in (e.get("links") or []) and e.get("new") in ("ASSUMED_BAD", "ERROR")
                       and float(e["t"]) > self.given_back.get(name, float("-inf"))]
            hosts = sorted({str(e.get("host")) for e in reports})
            if len(reports) < self.cfg.k or len(hosts) < self.cfg.min_hosts:
                continue
            evidence = _evidence(verdict, name, reports, hosts)
            plane = find_link(self.topo, name).plane
            if self._denied_in(plane) + 1 > self._limit(plane):
                if name not in self.refused:
                    self.refused.add(name)
                    out.append(Action("refuse", name, now, {**evidence, "reason": (
                        f"plane {plane}: {self._denied_in(plane)} of {self._plane_links.get(plane, 0)} links denied, "
                        f"at most {self._limit(plane)} ({self.cfg.max_share:.0%})")}))
                continue
            self.refused.discard(name)
            self.denied[name] = _Denied(now)
            out.append(Action("deny", name, now, evidence))
        return out

    def _named(self, v: Verdict, now: float) -> tuple[str, ...]:
        """The links the verdict calls to deny now (a tie may wait for counters)."""
        if v.exact or not v.tied:
            self.waiting, self._tie_since = (), None
            return (v.exact,) if v.exact else v.cover
        if any(t in self.denied for t in v.tied):  # the broken one is handled, or its twin is
            self.waiting, self._tie_since = (), None
            return ()
        if self._tie_since is None or set(self.waiting) != set(v.tied):
            self._tie_since = now
        self.waiting = v.tied
        if now - self._tie_since < self.cfg.tie_wait:
            return ()
        return v.tied

    def on_probe(self, name: str, answered: bool, now: float, detail: Mapping[str, Any] | None = None) -> list[Action]:
        """A probe round over denied link ``name``; the undeny it calls for, if any."""
        d = self.denied.get(name)
        if d is None:
            return []
        if not answered:
            d.answered_since = None
            return []
        if d.answered_since is None:
            d.answered_since = now
        if now - d.answered_since < self.cfg.hold:
            return []
        del self.denied[name]
        self.given_back[name] = now
        return [Action("undeny", name, now, {"answered_for_s": round(now - d.answered_since, 3),
                                             "denied_for_s": round(now - d.since, 3), **(detail or {})})]


def _evidence(v: Verdict, name: str, reports: list[Mapping[str, Any]], hosts: list[str]) -> dict[str, Any]:
    suspect = next((s for s in v.ranked if s.link == name), None)
    return {"reports": len(reports), "hosts": hosts, "failed_paths": v.failed, "working_paths": v.working,
            "explains": len(suspect.explains) if suspect else 0,
            "contradicted": len(suspect.contradicted) if suspect else 0,
            "tied": list(v.tied), "examples": sorted({s for s in (suspect.explains if suspect else ())})[:3]}


__all__ = ["Action", "Guard", "GuardConfig"]
