"""Mininet's CLI with the project's commands: paths, links, fail, restore, counters, watch, restart.

Why in the CLI: a person looking at the running fabric wants to see the paths a NIC
uses, break a link and see the traffic move, without leaving Mininet. The commands
call the controller (fabric/paths.py, repair.py, counters.py) on the running
network's state file, as ``mrcctl`` does, so the tables they change are the
controller's, and ``mrcctl`` in another terminal sees the same state.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from mininet.cli import CLI

from controller.counters import delta, plane_loads, port_rows, read_all
from fabric.paths import Link, find_link, links, paths
from fabric.topology import TopologyError
from topologies.demo import format_split
from topologies.p4switch import SwitchError

if TYPE_CHECKING:
    from topologies.fabric_net import FabricNetwork


def iperf6(client: object, server: object, seconds: float = 3.0, port: int = 5001) -> str:
    """``iperf`` (version 2) from ``client`` to ``server``'s IPv6 address; the client's
    bandwidth line (``... Mbits/sec``), or what went wrong."""
    import re

    srv = server.popen(["iperf", "-V", "-s", "-p", str(port)])  # type: ignore[attr-defined]
    try:
        time.sleep(0.5)
        out = client.cmd(f"iperf -V -c {server.ipv6} -p {port} -t {seconds:g} -f m")  # type: ignore[attr-defined]
    finally:
        srv.terminate()
        srv.wait()
    rates = re.findall(r"([\d.]+ [KMG]bits/sec)", out)
    return rates[-1] if rates else f"no result: {out.strip()[-200:]}"


class FabricCLI(CLI):
    """``mininet>`` with project commands (``help`` lists them)."""

    prompt = "mrc> "
    # node names like p0-leaf0 are one word for the command parser (cmd.Cmd stops at "-")
    identchars = CLI.identchars + "-"

    def __init__(self, fn: FabricNetwork, **kwargs: object) -> None:
        self.fn = fn
        self._reported: list[object] = []  # the processes (or switch names) already reported dead
        super().__init__(fn.net, **kwargs)

    def _say(self, text: str) -> None:
        self.stdout.write(text + "\n")

    def default(self, line: str) -> None:
        """``NODE CMD ARGS``: Mininet's own, with the fabric hosts' names after the
        first word replaced by their IPv6 addresses (Mininet would look for an IPv4
        address, which these hosts do not have, and leave the name)."""
        first, args, line = self.parseline(line)
        if first in self.mn and args:
            rest = [self._address(a) for a in args.split(" ")]
            line = " ".join([first, *rest])
        super().default(line)

    def _address(self, word: str) -> str:
        node = self.mn[word] if word in self.mn else None
        ip = getattr(node, "ipv6", None)
        return ip if isinstance(ip, str) else word

    def do_iperf(self, line: str) -> None:
        """iperf [CLIENT SERVER]: TCP throughput between two hosts over IPv6 (default: the first and last host)"""
        args = line.split()
        hosts = [h for h in self.mn.hosts if getattr(h, "ipv6", None)]
        if len(args) not in (0, 2) or (args and not all(a in self.mn for a in args)):
            self._say("usage: iperf [CLIENT SERVER] (host names, e.g. iperf h1 h3)")
            return
        client, server = (self.mn[args[0]], self.mn[args[1]]) if args else (hosts[0], hosts[-1])
        self._say(f"*** Iperf: testing TCP bandwidth between {client.name} and {server.name} (IPv6)")
        self._say(f"*** Results: {iperf6(client, server)}")

    def onecmd(self, line: str) -> bool:
        """Before each command, typed or from a script (``source`` calls this, not
        ``precmd``): say once per process which switch process died (a process of many
        switches once, naming them), with the end of its log."""
        for sw in self.fn.p4_switches():
            if sw.alive:
                continue
            key = sw.proc if sw.proc is not None else sw.name
            if all(key is not seen for seen in self._reported):
                self._reported.append(key)
                self._say(f"warning: {sw.died('while running')}")
        return bool(super().onecmd(line))

    def do_restart(self, line: str) -> None:
        """restart SWITCH: start a dead switch's process again (in a process of many
        switches, the whole process); its tables come back empty, so run install next"""
        name = line.strip()
        sw = next((s for s in self.fn.p4_switches() if name in (s.name, s.mrc_name)), None) if name else None
        if sw is None:
            self._say("usage: restart SWITCH (a P4 switch's name, e.g. restart p0-leaf0)")
            return
        try:
            sw.restart()
        except SwitchError as exc:
            self._say(f"error: {exc}")
            return
        self._say(f"{sw.describe()} answers again; run install (or mrcctl install) to fill its tables")

    def _down(self) -> set[Link]:
        inv = self.fn.reload_inventory()
        return {find_link(self.fn.topo, n) for n in inv.down}

    def do_install(self, line: str) -> None:
        """install: have the controller install (reconcile) every table of every switch"""
        from topologies.fabric_net import install_tables

        self.fn.reload_inventory()
        rep = install_tables(self.fn)
        self._say(rep.summary())
        for r in rep.failed:
            self._say(f"error: {r.error}")

    def do_pingmatrix(self, line: str) -> None:
        """pingmatrix: ping -6 from every host to every other host (replies/sent)"""
        from topologies.demo import format_matrix, ping_matrix

        for row in format_matrix(ping_matrix(self.fn)):
            self._say(row)

    def do_mrcctl(self, line: str) -> None:
        """mrcctl ARGS: the controller's command line on this network, e.g. mrcctl entries p0-leaf0"""
        import shlex
        import subprocess
        import sys
        from pathlib import Path

        exe = Path(sys.executable).with_name("mrcctl")
        cmd = [str(exe) if exe.is_file() else "mrcctl", "--state", str(self.fn.state_path), *shlex.split(line)]
        subprocess.run(cmd, check=False)

    def do_paths(self, line: str) -> None:
        """paths SRC DST: every EV of SRC's NIC towards DST (plane, switches, up/down), e.g. paths h1 h3"""
        args = line.split()
        if len(args) != 2:
            self._say("usage: paths SRC DST (controller host names, e.g. paths h1 h3)")
            return
        try:
            src, dst = self.fn.topo.host(args[0]), self.fn.topo.host(args[1])
        except TopologyError as exc:
            self._say(f"error: {exc}")
            return
        groups: dict[tuple[int, tuple[str, ...], bool], list[int]] = {}
        for p in paths(self.fn.topo, src, dst, self._down()):
            groups.setdefault((p.plane, p.hops, p.up), []).append(p.ev)
        for (plane, hops, up), evs in sorted(groups.items()):
            shown = ", ".join(f"{e:#06x}" for e in evs[:4]) + (", ..." if len(evs) > 4 else "")
            self._say(f"plane {plane}: {' -> '.join(hops)}  {'up' if up else 'DOWN'}  {len(evs)} EVs ({shown})")

    def do_links(self, line: str) -> None:
        """links: every cable of the fabric (controller names) and whether it is down"""
        down = {d.name for d in self._down()}
        for link in links(self.fn.topo):
            ends = self.fn.inventory.links.get(link.name)
            where = f"  ({ends.a_intf} <-> {ends.b_intf})" if ends else ""
            self._say(f"{link.name}{where}{'  DOWN' if link.name in down else ''}")

    def _set(self, line: str, down: bool) -> None:
        from controller.cable_cuts import set_link

        name = line.strip()
        if not name:
            self._say(f"usage: {'fail' if down else 'restore'} LINK (e.g. p0-leaf0:p0-spine0; `links` lists them)")
            return
        try:
            self.fn.reload_inventory()
            rep = asyncio.run(set_link(self.fn.topo, self.fn.inventory, name, down=down, nodes=self.fn.net.nameToNode))
        except Exception as exc:  # one line for the person at the prompt
            self._say(f"error: {exc}")
            return
        self._say(f"{rep.link} {'down' if down else 'up'}: {rep.cable}; no table written")

    def do_fail(self, line: str) -> None:
        """fail LINK: set a cable down (no table is written), e.g. fail p0-leaf0:p0-spine0"""
        self._set(line, down=True)

    def do_restore(self, line: str) -> None:
        """restore LINK: bring a cable back up (no table is written)"""
        self._set(line, down=False)

    def do_counters(self, line: str) -> None:
        """counters [SWITCH...]: per-port packet counters over P4Runtime (default: every switch with traffic)"""
        wanted = line.split() or list(self.fn.inventory.switches)
        try:
            targets = [self.fn.inventory.switches[n] for n in wanted]
        except KeyError as exc:
            self._say(f"error: no switch {exc}; switches are named like p0-leaf0, p0-spine1, nic1")
            return
        counts = asyncio.run(read_all(targets))
        for t in targets:
            rows = [r for r in port_rows(self.fn.topo, t.name, t.program, counts[t.name])]
            if not rows:
                continue
            cells = ", ".join(f"port {r['port']}: rx {r['rx_packets']} tx {r['tx_packets']}" for r in rows)
            self._say(f"{t.name}: {cells}")

    def do_watch(self, line: str) -> None:
        """watch [SECONDS]: packets the NICs send into each plane, every second (Ctrl-C stops)"""
        try:
            seconds = float(line) if line.strip() else 10.0
        except ValueError:
            self._say("usage: watch [SECONDS]")
            return
        nics = [self.fn.inventory.switches[h.nic] for h in self.fn.topo.hosts]
        last = asyncio.run(read_all(nics))
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                time.sleep(1.0)
                now = asyncio.run(read_all(nics))
                self._say(format_split(self.fn.topo.planes, plane_loads(self.fn.topo, delta(now, last))) + " (per second)")
                last = now
        except KeyboardInterrupt:
            self._say("")
