"""A running network's cables up and down: ``mrcctl fail/restore`` and the Mininet CLI.

Why here: in MRC a failed link is the endpoints' business. ``fail``/``restore`` only
take the cable down/up (in a running Mininet network, whose interfaces are in the
state file) and write no table at all: the senders find the dead paths by their own
evidence and get them back by probes (docs/transport.md). Denying a link, the
operator's explicit action, is the controller's (controller/repair.py).
"""

from __future__ import annotations

import shlex
import subprocess
import time

from controller.errors import SwitchError
from controller.repair import RepairReport
from fabric.paths import Link, find_link
from fabric.topology import Topology
from topologies.state import Inventory, LinkEnds

NO_NETWORK = "no running network: the cable is not touched"


def down_links(topo: Topology, inv: Inventory) -> set[Link]:
    """The links whose cable is down (``fail``)."""
    return {find_link(topo, name) for name in inv.down}


CUT_TABLE_PREFIX = "mrc_cut_"  # nftables tables that hold a cut cable on its ends (tools/cleanup.py)


def _in_node(node_pid: int | None, cmd: list[str], server: str | None = None) -> list[str]:
    """``cmd`` in the node's namespace, on its server (over ssh) when it is on another one."""
    cmd = ["nsenter", "-t", str(node_pid), "-n", *cmd] if node_pid else cmd
    if server:
        from topologies.cluster_ssh import SHARED, SSH_OPTIONS

        return ["ssh", *SSH_OPTIONS, *SHARED, server, shlex.join(cmd)]
    return cmd


def cut_table(intf: str) -> str:
    """The nftables table that drops what ``intf`` sends while its cable is cut."""
    return CUT_TABLE_PREFIX + "".join(c if c.isalnum() else "_" for c in intf)


def _set_carrier(node_pid: int | None, intf: str, up: bool, server: str | None = None) -> None:
    state = "up" if up else "down"
    r = subprocess.run(_in_node(node_pid, ["ip", "link", "set", intf, state], server), capture_output=True,
                       text=True, timeout=30)
    if r.returncode != 0:
        raise SwitchError(f"cannot set {intf} {state}: {r.stderr.strip()}")


def _set_blocked(node_pid: int | None, intf: str, up: bool, server: str | None = None) -> None:
    """Cut without a carrier change: every frame ``intf`` sends is dropped at its egress
    hook (nftables' netdev family), the interface itself stays up."""
    table = cut_table(intf)
    if up:
        cmd, rules = ["nft", "delete", "table", "netdev", table], None
    else:
        cmd = ["nft", "-f", "-"]
        rules = (f'table netdev {table} {{ chain cut {{ type filter hook egress device "{intf}" '
                 "priority 0; policy drop; }; }\n")
    r = subprocess.run(_in_node(node_pid, cmd, server), input=rules, capture_output=True, text=True, timeout=30)
    if r.returncode != 0 and not (up and "No such file" in r.stderr):
        raise SwitchError(f"cannot {'restore' if up else 'cut'} {intf} with nftables: {r.stderr.strip()}")


def set_cable(ends: LinkEnds, up: bool, *, keep_carrier: bool = False) -> str:
    """Set both interfaces of a running network's cable up or down.

    ``keep_carrier``: cut by dropping what both ends send instead of taking the
    interfaces down, for BMv2, whose switch stops forwarding on all its ports once one
    of its interfaces goes down, and does not recover when it comes back up
    (docs/mininet.md, "Running on BMv2")."""
    state = "up" if up else "down"
    for node_pid, intf, server in ((ends.a_pid, ends.a_intf, ends.a_server), (ends.b_pid, ends.b_intf, ends.b_server)):
        if keep_carrier:
            _set_blocked(node_pid, intf, up, server)
        else:
            _set_carrier(node_pid, intf, up, server)
    how = " (carrier kept: nothing sent crosses it)" if keep_carrier and not up else ""
    return f"{ends.a_intf} and {ends.b_intf} {state}{how}"


async def set_link(topo: Topology, inv: Inventory, name: str, *, down: bool) -> RepairReport:
    """Take link ``name``'s cable down (or up) and record it in the state file; no
    switch is contacted, no table written."""
    t0 = time.monotonic()
    link = find_link(topo, name)
    ends = inv.links.get(link.name)
    bmv2 = any(inv.switches[n].target == "bmv2" for n in (link.a, link.b) if n in inv.switches)
    cable = NO_NETWORK if ends is None else set_cable(ends, up=not down, keep_carrier=bmv2)
    dead = down_links(topo, inv)
    dead = dead | {link} if down else dead - {link}
    inv.down = sorted(d.name for d in dead)
    inv.save()
    return RepairReport(link.name, down, [], time.monotonic() - t0, None, cable)


__all__ = ["CUT_TABLE_PREFIX", "NO_NETWORK", "cut_table", "down_links", "set_cable", "set_link"]
