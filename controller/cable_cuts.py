"""A running network's cables up and down: ``mrcctl fail/restore`` and the Mininet CLI.

Why no table: in MRC a failed link is the endpoints' business. ``fail``/``restore``
only take the cable down/up (in a running network, whose interfaces are in its state
file, controller/network_state.py) and write no table at all: the senders find the
dead paths by their own evidence and get them back by probes (docs/transport.md).
Denying a link, the operator's explicit action, is controller/repair.py's. Why in the
controller package: a cut is a command run on each end's namespace (``ip``, ``nft``,
over ssh on another server), not a use of Mininet, so ``mrcctl`` reaches it without
importing the Mininet package; the Mininet CLI and the demo call the same functions
(with the nodes' shells when they hold them).
"""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Mapping
from typing import Any

from controller.errors import SwitchError
from controller.network_state import Inventory, LinkEnds
from controller.repair import RepairReport
from controller.ssh_options import SHARED, SSH_OPTIONS
from fabric.paths import Link, find_link
from fabric.topology import Topology, TopologyError

NO_NETWORK = "no running network: the cable is not touched"


def down_links(topo: Topology, inv: Inventory) -> set[Link]:
    """The links whose cable is down (``fail``)."""
    return {find_link(topo, name) for name in inv.down}


CUT_TABLE_PREFIX = "mrc_cut_"  # nftables tables that hold a cut cable on its ends (tools/cleanup.py)


def _in_node(node_pid: int | None, cmd: list[str], server: str | None = None) -> list[str]:
    """``cmd`` in the node's namespace, on its server (over ssh) when it is on another one."""
    cmd = ["nsenter", "-t", str(node_pid), "-n", *cmd] if node_pid else cmd
    if server:
        return ["ssh", *SSH_OPTIONS, *SHARED, server, shlex.join(cmd)]
    return cmd


def cut_table(intf: str) -> str:
    """The nftables table that drops what ``intf`` sends while its cable is cut."""
    return CUT_TABLE_PREFIX + "".join(c if c.isalnum() else "_" for c in intf)


def _end_command(node_pid: int | None, intf: str, up: bool, keep_carrier: bool) -> tuple[list[str], str | None]:
    """The command (and its input) that sets one end of a cable up or down, in the node's
    namespace. ``keep_carrier``: by nftables (every frame ``intf`` sends dropped at its
    egress hook, the interface itself stays up), else by the interface's state."""
    if not keep_carrier:
        return ["ip", "link", "set", intf, "up" if up else "down"], None
    table = cut_table(intf)
    if up:
        return ["nft", "delete", "table", "netdev", table], None
    return ["nft", "-f", "-"], (f'table netdev {table} {{ chain cut {{ type filter hook egress device "{intf}" '
                                "priority 0; policy drop; }; }\n")


def _failure(intf: str, up: bool, keep_carrier: bool, code: int, err: str) -> str | None:
    """What went wrong setting one end (None: nothing; restoring a cut that is not there
    is no failure)."""
    if code == 0 or (keep_carrier and up and "No such file" in err):
        return None
    if keep_carrier:
        return f"cannot {'restore' if up else 'cut'} {intf} with nftables: {err.strip()}"
    return f"cannot set {intf} {'up' if up else 'down'}: {err.strip()}"


RC_MARK = "mrc-cable-rc="  # how a node shell's command reports its exit status


class _EndCommand:
    """One end's command, started without waiting: both ends' commands of a cable run at
    the same time (on a cluster each is a round trip to its server), then both are
    waited for. It runs in the node's Mininet shell when one is given (``node``: already
    open, on the node's server, in its namespace: no process to start but the command
    itself), else as a process here (``nsenter`` into the node's namespace; over the
    server's shared ssh connection when the node is on another server)."""

    def __init__(self, node_pid: int | None, intf: str, up: bool, keep_carrier: bool, server: str | None,
                 node: Any = None) -> None:
        self.intf, self.up, self.keep_carrier = intf, up, keep_carrier
        cmd, stdin = _end_command(node_pid, intf, up, keep_carrier)
        self.node = node if node is not None and getattr(node, "shell", None) and not node.waiting else None
        self.proc: subprocess.Popen[str] | None = None
        if self.node is not None:
            line = shlex.join(cmd) if stdin is None else f"printf %s {shlex.quote(stdin)} | {shlex.join(cmd)}"
            self.node.sendCmd(f"{line} 2>&1; echo {RC_MARK}$?")
        else:
            self.proc = subprocess.Popen(_in_node(node_pid, cmd, server), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.stdin = stdin

    def wait(self) -> str | None:
        """Wait for the command; what went wrong (None: nothing)."""
        if self.node is not None:
            out = self.node.waitOutput()
            head, _, code = out.rpartition(RC_MARK)
            status = int(code.split()[0]) if code.split() and code.split()[0].isdigit() else 1
            return _failure(self.intf, self.up, self.keep_carrier, status, head)
        assert self.proc is not None
        try:
            _, err = self.proc.communicate(self.stdin, timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            return f"cannot set {self.intf} {'up' if self.up else 'down'}: no answer within 30 s"
        return _failure(self.intf, self.up, self.keep_carrier, self.proc.returncode, err)


def set_cable(ends: LinkEnds, up: bool, *, keep_carrier: bool = False, nodes: Mapping[str, Any] | None = None) -> str:
    """Set both interfaces of a running network's cable up or down, both at once: each
    end's command is started, then both are waited for (SwitchError naming what failed,
    once both have ended).

    ``keep_carrier``: cut by dropping what both ends send instead of taking the
    interfaces down, for BMv2, whose switch stops forwarding on all its ports once one
    of its interfaces goes down, and does not recover when it comes back up
    (docs/mininet.md, "Running on BMv2"). ``nodes``: the running network's Mininet
    nodes by name (``Mininet.nameToNode``), when the caller holds them: each end's
    command then runs in its node's shell."""
    state = "up" if up else "down"
    nodes = nodes or {}
    running = [_EndCommand(pid, intf, up, keep_carrier, server, nodes.get(node))
               for node, pid, intf, server in ((ends.a_node, ends.a_pid, ends.a_intf, ends.a_server),
                                               (ends.b_node, ends.b_pid, ends.b_intf, ends.b_server))]
    failed = [f for f in (c.wait() for c in running) if f]
    if failed:
        raise SwitchError("; ".join(failed))
    how = " (carrier kept: nothing sent crosses it)" if keep_carrier and not up else ""
    return f"{ends.a_intf} and {ends.b_intf} {state}{how}"


async def set_link(topo: Topology, inv: Inventory, name: str, *, down: bool,
                   nodes: Mapping[str, Any] | None = None) -> RepairReport:
    """Take link ``name``'s cable down (or up) and record it in the state file; no
    switch is contacted, no table written. ``nodes``: as for ``set_cable``."""
    t0 = time.monotonic()
    link = find_link(topo, name)
    ends = inv.links.get(link.name)
    bmv2 = any(inv.switches[n].target == "bmv2" for n in (link.a, link.b) if n in inv.switches)
    cable = NO_NETWORK if ends is None else set_cable(ends, up=not down, keep_carrier=bmv2, nodes=nodes)
    was = list(inv.down)
    dead = down_links(topo, inv)
    dead = dead | {link} if down else dead - {link}
    inv.down = sorted(d.name for d in dead)
    try:
        inv.save()
    except TopologyError:  # not recorded: the cable is put back as it was, nothing half-done
        inv.down = was
        if ends is not None:
            set_cable(ends, up=down, keep_carrier=bmv2, nodes=nodes)
        raise
    return RepairReport(link.name, down, [], time.monotonic() - t0, None, cable)


__all__ = ["CUT_TABLE_PREFIX", "NO_NETWORK", "cut_table", "down_links", "set_cable", "set_link"]
