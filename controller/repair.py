"""Denials: ``mrcctl deny/undeny``, MRC's DENIED.

Why the controller's: a denial is the operator's explicit action. Every NIC whose
spray groups or EV table hold a path over the link loses those members and EVs (and
gets them back on undeny); the entries are recomputed from the topology and the set
of denied links (fabric/wanted.py) and reconciled into the NICs only. The fabric's
tables are static (docs/fabric.md) and never written; the cable is not touched (a
cable cut is controller/cable_cuts.py's).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from controller.reconcile import Reconciler, Report
from controller.targets import SwitchTarget
from fabric.paths import Link, find_link
from fabric.topology import Topology
from fabric.wanted import wanted_entries


class DeniedRecord(Protocol):
    """Where the denied links are kept (a running network's state file): its switches,
    the names of the denied links, and a way to write them down."""

    denied: list[str]

    @property
    def switches(self) -> Mapping[str, SwitchTarget]: ...

    def save(self, path: Path | None = None) -> Path: ...


@dataclass
class RepairReport:
    link: str
    down: bool  # fail: the cable is down now; deny: the link is denied now
    changed: list[str]  # NICs that were written (none for fail/restore)
    seconds: float  # from the command to the last write or cable change
    report: Report | None  # the NICs' reconcile (deny/undeny); None for fail/restore
    cable: str  # what was done to the cable itself

    @property
    def failed(self) -> bool:
        return bool(self.report and self.report.failed)

    @property
    def writes(self) -> int:
        return self.report.writes if self.report else 0


def denied_links(topo: Topology, inv: DeniedRecord) -> set[Link]:
    """The links the NICs avoid (``deny``): what the NICs' entries are computed for."""
    return {find_link(topo, name) for name in inv.denied}


async def set_denied(topo: Topology, inv: DeniedRecord, name: str, *, denied: bool, election_id: int = 1,
                     keep_going: bool = False) -> RepairReport:
    """Deny link ``name`` (or lift the denial): reconcile every NIC with the entries
    for the denied links; the cable is not touched."""
    t0 = time.monotonic()
    link = find_link(topo, name)
    avoid = denied_links(topo, inv)
    avoid = avoid | {link} if denied else avoid - {link}
    wanted = wanted_entries(topo, [a.name for a in avoid], program="nic")
    targets = [inv.switches[name] for name in wanted]
    rep = await Reconciler(targets, election_id=election_id, keep_going=keep_going).run(wanted)
    if not rep.failed or keep_going:
        inv.denied = sorted(a.name for a in avoid)
        inv.save()
    changed = [r.name for r in rep.results if r.writes]
    return RepairReport(link.name, denied, changed, time.monotonic() - t0, rep, "not touched")


__all__ = ["DeniedRecord", "RepairReport", "denied_links", "set_denied"]
