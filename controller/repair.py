"""Link failures and denials: ``mrcctl fail/restore`` and ``mrcctl deny/undeny``.

Why two pairs: in MRC a failed link is the endpoints' business. ``fail``/``restore``
only take the cable down/up (in a running Mininet network, whose interfaces are in
the state file) and write no table at all: the senders find the dead paths by their
own evidence and get them back by probes (docs/transport.md). ``deny``/``undeny`` is
the operator's explicit action (MRC's DENIED): every NIC whose spray groups or EV
table hold a path over the link loses those members and EVs (and gets them back on
undeny); the entries are recomputed from the topology and the set of denied links,
and reconciled into the NICs only. The fabric's tables are static (docs/fabric.md)
and never written by either.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass

from controller.entries import entries_of, nodes
from controller.errors import SwitchError
from controller.inventory import Inventory, LinkEnds
from controller.paths import Link, failures_of, find_link
from controller.reconcile import Reconciler, Report
from controller.topology import Topology

NO_NETWORK = "no running network: the cable is not touched"


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


def down_links(topo: Topology, inv: Inventory) -> set[Link]:
    """The links whose cable is down (``fail``)."""
    return {find_link(topo, name) for name in inv.down}


def denied_links(topo: Topology, inv: Inventory) -> set[Link]:
    """The links the NICs avoid (``deny``): what the NICs' entries are computed for."""
    return {find_link(topo, name) for name in inv.denied}


def set_cable(ends: LinkEnds, up: bool) -> str:
    """Set both interfaces of a running network's cable up or down."""
    state = "up" if up else "down"
    for node_pid, intf in ((ends.a_pid, ends.a_intf), (ends.b_pid, ends.b_intf)):
        cmd = ["ip", "link", "set", intf, state]
        if node_pid:
            cmd = ["nsenter", "-t", str(node_pid), "-n", *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise SwitchError(f"cannot set {intf} {state}: {r.stderr.strip()}")
    return f"{ends.a_intf} and {ends.b_intf} {state}"


async def set_link(topo: Topology, inv: Inventory, name: str, *, down: bool) -> RepairReport:
    """Take link ``name``'s cable down (or up) and record it in the state file; no
    switch is contacted, no table written."""
    t0 = time.monotonic()
    link = find_link(topo, name)
    ends = inv.links.get(link.name)
    cable = NO_NETWORK if ends is None else set_cable(ends, up=not down)
    dead = down_links(topo, inv)
    dead = dead | {link} if down else dead - {link}
    inv.down = sorted(l.name for l in dead)
    inv.save()
    return RepairReport(link.name, down, [], time.monotonic() - t0, None, cable)


async def set_denied(topo: Topology, inv: Inventory, name: str, *, denied: bool, election_id: int = 1,
                     keep_going: bool = False) -> RepairReport:
    """Deny link ``name`` (or lift the denial): reconcile every NIC with the entries
    for the denied links; the cable is not touched."""
    t0 = time.monotonic()
    link = find_link(topo, name)
    avoid = denied_links(topo, inv)
    avoid = avoid | {link} if denied else avoid - {link}
    failures = failures_of(avoid)
    nics = [n for n in nodes(topo) if n.program == "nic"]
    wanted = {n.name: entries_of(topo, n, failures) for n in nics}
    targets = [inv.switches[n.name] for n in nics]
    rep = await Reconciler(targets, election_id=election_id, keep_going=keep_going).run(wanted)
    if not rep.failed or keep_going:
        inv.denied = sorted(l.name for l in avoid)
        inv.save()
    changed = [r.name for r in rep.results if r.writes]
    return RepairReport(link.name, denied, changed, time.monotonic() - t0, rep, "not touched")


__all__ = ["NO_NETWORK", "RepairReport", "denied_links", "down_links", "set_cable", "set_denied", "set_link"]
