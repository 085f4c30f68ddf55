"""Link failures: ``mrcctl fail`` / ``mrcctl restore``.

Why no fabric writes: the fabric's tables are static (docs/fabric.md); a dead
link only loses the packets sent on it. What changes is the NICs' choice of paths:
every NIC whose spray groups or EV table hold a path over the link loses those
members and EVs (and gets them back on restore). The entries are recomputed from the
topology and the set of links that are down, and reconciled into the NICs only.
When the network is a running Mininet network, the cable itself is set down/up too
(its interfaces are in the state file).
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


@dataclass
class RepairReport:
    link: str
    down: bool
    changed: list[str]  # NICs that were written
    seconds: float  # from the command to the last write
    report: Report
    cable: str  # what was done to the cable itself


def down_links(topo: Topology, inv: Inventory) -> set[Link]:
    return {find_link(topo, name) for name in inv.down}


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


async def set_link(topo: Topology, inv: Inventory, name: str, *, down: bool, election_id: int = 1,
                   keep_going: bool = False) -> RepairReport:
    """Mark link ``name`` down (or up), set the cable, reconcile every NIC."""
    t0 = time.monotonic()
    link = find_link(topo, name)
    cable = "no running network: the cable is not touched"
    ends = inv.links.get(link.name)
    if ends is not None and down:
        cable = set_cable(ends, up=False)
    dead = down_links(topo, inv)
    dead = dead | {link} if down else dead - {link}
    failures = failures_of(dead)
    nics = [n for n in nodes(topo) if n.program == "nic"]
    wanted = {n.name: entries_of(topo, n, failures) for n in nics}
    targets = [inv.switches[n.name] for n in nics]
    rep = await Reconciler(targets, election_id=election_id, keep_going=keep_going).run(wanted)
    if ends is not None and not down:
        cable = set_cable(ends, up=True)
    if not rep.failed or keep_going:
        inv.down = sorted(l.name for l in dead)
        inv.save()
    changed = [r.name for r in rep.results if r.writes]
    return RepairReport(link.name, down, changed, time.monotonic() - t0, rep, cable)


__all__ = ["RepairReport", "down_links", "set_cable", "set_link"]
