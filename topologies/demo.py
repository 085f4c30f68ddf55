"""The `make run` demo on a started, programmed fabric: pings, one MRC flow, a cut link.

Why these three: together they show what the fabric is for. Every pair of hosts
reaches each other over IPv6 through the NICs and the P4 fabric (the ping matrix); one
MRC flow is spread over every plane (per-plane packet counts read from the NICs'
P4Runtime counters, not from the senders' intentions); and a spine link cut in the
middle of the flow changes no fabric table, only the NICs' choice of paths
(controller/repair.py), while the other planes keep carrying the flow.

Pure reporting (``format_*``) is separate from the steps that touch the network.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from controller import plan as P
from controller.counters import Counts, delta, read_all
from controller.entries import nodes
from controller.paths import links
from topologies.fabric_net import FabricNetwork
from topologies.mrc_flow import MRC_PORT
from topologies.p4switch import REPO
from topologies.ping import PingResult

Say = Callable[[str], None]


def ping_matrix(fn: FabricNetwork, count: int = 2) -> dict[tuple[str, str], PingResult]:
    """``ping -6`` from every host to every other host."""
    hosts = [h.name for h in fn.topo.hosts]
    return {(a, b): fn.ping(a, b, count) for a, b in itertools.permutations(hosts, 2)}


def format_matrix(results: dict[tuple[str, str], PingResult]) -> list[str]:
    """Rows of replies/sent, one row per source host."""
    hosts = sorted({a for a, _ in results} | {b for _, b in results}, key=lambda h: int(h[1:]))
    width = max(len(h) for h in hosts) + 1
    lines = ["from\\to".ljust(width + 2) + "".join(h.rjust(7) for h in hosts)]
    for a in hosts:
        cells = []
        for b in hosts:
            r = results.get((a, b))
            cells.append("-".rjust(7) if r is None else f"{r.received}/{r.sent}".rjust(7))
        lines.append(a.ljust(width + 2) + "".join(cells))
    return lines


def spine_link(fn: FabricNetwork, src: str, dst: str) -> str | None:
    """The cable to cut: the source leaf's first uplink in the lowest plane that has one,
    when the two hosts are on different leaves (None: no spine on their paths)."""
    s, d = fn.topo.host(src), fn.topo.host(dst)
    if s.leaf == d.leaf:
        return None
    for link in links(fn.topo):
        if link.kind == "fabric" and link.leaf == s.leaf:
            return link.name
    return None


@dataclass
class FlowResult:
    """One MRC flow: what was sent and received, per plane before and after the cut."""

    src: str
    dst: str
    sent: int
    received: int
    evs: int
    planes_before: dict[int, int]  # packets the source NIC sent into each plane (before the cut, or all)
    planes_after: dict[int, int]  # after the cut (empty without one)
    delivered_before: dict[int, int]  # packets the destination NIC received from each plane
    delivered_after: dict[int, int]
    cut: str | None = None
    repair_seconds: float | None = None
    nics_rewritten: list[str] = field(default_factory=list)
    fabric_unchanged: bool | None = None

    @property
    def lost(self) -> int:
        return self.sent - self.received


def _plane_counts(counts: Counts, counter: str) -> dict[int, int]:
    return {p: pk for p, (pk, _) in sorted(counts.get(counter, {}).items())}


async def _read(fn: FabricNetwork, names: list[str]) -> dict[str, Counts]:
    return await read_all([fn.inventory.switches[n] for n in names])


async def fabric_tables(fn: FabricNetwork) -> dict[str, list]:
    """Every entry of every fabric switch, read back over P4Runtime."""
    from controller.p4rt import Session, codec

    async def one(name: str) -> tuple[str, list]:
        t = fn.inventory.switches[name]
        async with Session(t) as s:
            return name, sorted(map(repr, await s.read_entries(codec(t.program, t.target))))

    fabric = [n.name for n in nodes(fn.topo) if n.program == "fabric"]
    return dict(await asyncio.gather(*(one(n) for n in fabric)))


def run_flow(fn: FabricNetwork, src: str, dst: str, *, packets: int = 400, pps: float = 400.0,
             cut: str | None = None, say: Say = lambda _: None) -> FlowResult:
    """Send one MRC flow from ``src`` to ``dst`` over every EV of ``src``'s NIC; with
    ``cut``, set that link down (controller: cable + NICs) half-way through."""
    from controller.repair import set_link

    s_host, d_host = fn.topo.host(src), fn.topo.host(dst)
    evs = [e.ev for e in P.nic_evs(fn.topo, s_host, d_host)]
    nics = [s_host.nic, d_host.nic]
    before = asyncio.run(_read(fn, nics))
    py = sys.executable
    receiver = fn.host(dst).popen([py, "-m", "topologies.mrc_flow", "recv", "--port", str(MRC_PORT),
                                   "--seconds", str(packets / pps + 15), "--expect", str(packets)], cwd=REPO)
    time.sleep(0.5)  # the receiver binds its socket
    sender = fn.host(src).popen([py, "-m", "topologies.mrc_flow", "send", fn.address(dst), "--evs",
                                 ",".join(map(str, evs)), "--packets", str(packets), "--pps", str(pps),
                                 "--src", fn.address(src)], cwd=REPO)
    mid = before
    repair_seconds = None
    rewritten: list[str] = []
    tables_before = tables_after = None
    try:
        if cut is not None:
            tables_before = asyncio.run(fabric_tables(fn))
            time.sleep(packets / pps / 2)
            mid = asyncio.run(_read(fn, nics))
            rep = asyncio.run(set_link(fn.topo, fn.inventory, cut, down=True))
            repair_seconds, rewritten = rep.seconds, rep.changed
            say(f"  cut {rep.link} after {sum(_plane_counts(delta(mid, before)[s_host.nic], 'NicEgress.plane_tx').values())}"
                f" packets: {rep.cable}; {len(rep.changed)} NICs rewritten in {rep.seconds * 1000:.0f} ms, "
                "no fabric write")
        sent_out, _ = sender.communicate(timeout=packets / pps + 30)
        recv_out, _ = receiver.communicate(timeout=packets / pps + 30)
    finally:
        for p in (sender, receiver):
            if p.poll() is None:
                p.kill()
                p.wait()
    after = asyncio.run(_read(fn, nics))
    if cut is None:
        mid = after  # one phase: the whole flow is "before"
    else:
        tables_after = asyncio.run(fabric_tables(fn))
    sent = json.loads(sent_out.decode().strip().splitlines()[-1])
    got = json.loads(recv_out.decode().strip().splitlines()[-1])
    first, second = delta(mid, before), delta(after, mid)
    return FlowResult(
        src, dst, int(sent["sent"]), int(got["received"]), len(evs),
        _plane_counts(first[s_host.nic], "NicEgress.plane_tx"), _plane_counts(second[s_host.nic], "NicEgress.plane_tx"),
        _plane_counts(first[d_host.nic], "NicIngress.plane_rx"), _plane_counts(second[d_host.nic], "NicIngress.plane_rx"),
        cut, repair_seconds, rewritten,
        None if tables_before is None else tables_before == tables_after)


def format_split(planes: int, counts: dict[int, int]) -> str:
    total = sum(counts.values())
    parts = []
    for p in range(planes):
        n = counts.get(p, 0)
        parts.append(f"plane {p}: {n}" + (f" ({100 * n / total:.0f}%)" if total else ""))
    return ", ".join(parts)
