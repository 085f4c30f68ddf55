"""The `make run` demo on a started, programmed fabric: pings, one MRC flow, a cut link.

Why these three: together they show what the fabric is for. Every pair of hosts
reaches each other over IPv6 through the NICs and the P4 fabric (the ping matrix); one
MRC-lite transfer (the endpoints' mrc-send and mrc-recv) is spread over every plane (per-plane packet counts read from the NICs'
P4Runtime counters, not from the senders' intentions); and a spine link cut in the
middle of the flow changes no fabric table, only the NICs' choice of paths
(topologies/cables.py), while the other planes keep carrying the flow.

Pure reporting (``format_*``) is separate from the steps that touch the network.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.counters import Counts, delta, read_all
from fabric import plan as P
from fabric.entries import nodes
from fabric.paths import links, paths
from topologies.fabric_net import FabricNetwork
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
    """One MRC-lite transfer (mrc-send -> mrc-recv): its verdict and report, and the
    packets per plane before and after the cut as the NICs counted them."""

    src: str
    dst: str
    nbytes: int
    verified: bool  # every byte arrived and the receiver's SHA-256 matched the sender's
    report: dict[str, Any]  # mrc-send's JSON report (docs/endpoints.md)
    evs: int
    planes_before: dict[int, int]  # packets the source NIC sent into each plane (before the cut, or all)
    planes_after: dict[int, int]  # after the cut (empty without one)
    delivered_before: dict[int, int]  # packets the destination NIC received from each plane
    delivered_after: dict[int, int]
    cut: str | None = None
    cut_seconds: float | None = None  # the cable command's time
    fabric_unchanged: bool | None = None
    errors: list[str] = field(default_factory=list)
    crossing: list[int] = field(default_factory=list)  # EVs whose path uses the cut cable
    retired: list[int] = field(default_factory=list)  # EVs the sender retired
    recovered_after_restore: list[int] = field(default_factory=list)  # crossing EVs back after the restore
    recovered_while_down: list[int] = field(default_factory=list)

    @property
    def healthy_retired(self) -> list[int]:
        return sorted(set(self.retired) - set(self.crossing))


def _plane_counts(counts: Counts, counter: str) -> dict[int, int]:
    return {p: pk for p, (pk, _) in sorted(counts.get(counter, {}).items())}


async def _read(fn: FabricNetwork, names: list[str]) -> dict[str, Counts]:
    return await read_all([fn.inventory.switches[n] for n in names])


def read_nics(fn: FabricNetwork, names: list[str]) -> dict[str, Counts]:
    """Every counter of the switches ``names``, now."""
    return asyncio.run(_read(fn, names))


class NicProgress:
    """The packets a transfer's NICs have counted, polled over P4Runtime sessions kept
    open for the whole transfer: a cut timed "half-way" must land while the sender is
    still sending, and opening a session per poll (a connection to every NIC each
    time) took longer on a loaded machine with BMv2 than a short transfer lasts.

    ``src``'s ``NicEgress.plane_tx`` (what it sent into each plane) and, with ``dst``,
    that NIC's ``NicIngress.plane_rx``; ``read`` returns them as ``Counts`` per NIC."""

    def __init__(self, fn: FabricNetwork, src: str, dst: str | None = None) -> None:
        from controller.codec import codec
        from controller.p4rt import Session

        self._reads = [(src, "NicEgress.plane_tx")] + ([(dst, "NicIngress.plane_rx")] if dst else [])
        self._sessions = {n: Session(fn.inventory.switches[n], primary=False) for n, _ in self._reads}
        self._codecs = {n: codec(t.target.program, t.target.target) for n, t in self._sessions.items()}
        self.src = src

    async def __aenter__(self) -> NicProgress:
        opened = []
        try:
            for s in self._sessions.values():
                await s.open()
                opened.append(s)
        except BaseException:
            for s in opened:
                await s.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        for s in self._sessions.values():
            await s.close()

    async def read(self) -> dict[str, Counts]:
        async def one(nic: str, counter: str) -> tuple[str, str, dict[int, tuple[int, int]]]:
            return nic, counter, await self._sessions[nic].read_counter(self._codecs[nic], counter)

        out: dict[str, Counts] = {}
        for nic, counter, cells in await asyncio.gather(*(one(n, c) for n, c in self._reads)):
            out.setdefault(nic, {})[counter] = cells
        return out

    def sent(self, now: dict[str, Counts], before: dict[str, Counts]) -> int:
        """Packets ``src`` sent into the planes between ``before`` and ``now``."""
        return sum(_plane_counts(delta(now, before)[self.src], "NicEgress.plane_tx").values())

    async def until_sent(self, before: dict[str, Counts], packets: int, timeout: float) -> dict[str, Counts]:
        """Poll until ``src`` has sent ``packets`` since ``before`` (or ``timeout``
        seconds have passed); the last read."""
        end = time.monotonic() + timeout
        while True:
            now = await self.read()
            if self.sent(now, before) >= packets or time.monotonic() > end:
                return now
            await asyncio.sleep(0.02)


async def fabric_tables(fn: FabricNetwork, programs: tuple[str, ...] = ("fabric",)) -> dict[str, list[str]]:
    """Every entry of every fabric switch (or of every switch running one of
    ``programs``), read back over P4Runtime."""
    from controller.codec import codec
    from controller.p4rt import Session

    async def one(name: str) -> tuple[str, list[str]]:
        t = fn.inventory.switches[name]
        # a read needs no arbitration: BMv2 refuses a second primary stream of the same election
        # id while it still tears down the last one (``Election id already exists``)
        async with Session(t, primary=False) as s:
            return name, sorted(map(repr, await s.read_entries(codec(t.program, t.target))))

    names = [n.name for n in nodes(fn.topo) if n.program in programs]
    return dict(await asyncio.gather(*(one(n) for n in names)))


def run_flow(fn: FabricNetwork, src: str, dst: str, *, nbytes: int = 2_000_000, pps: float = 1000.0,
             cut: str | None = None, say: Say = lambda _: None) -> FlowResult:
    """One MRC-lite transfer of ``nbytes`` from ``src`` to ``dst`` over every EV of
    ``src``'s NIC, paced at ``pps``; with ``cut``, that link's cable goes down (no
    table is written) half-way through and back up at three quarters, and the
    transfer must still verify every byte."""
    import tempfile

    from topologies.cables import set_link
    from topologies.transfer import Transfer

    s_host, d_host = fn.topo.host(src), fn.topo.host(dst)
    evs = P.nic_evs(fn.topo, s_host, d_host)
    nics = [s_host.nic, d_host.nic]
    seconds = nbytes / 1000 / pps  # 1,000-byte payloads
    packets = -(-nbytes // 1000)
    before = asyncio.run(_read(fn, nics))
    mid = before
    cut_seconds = None
    cut_at = restored_at = None
    tables_before = tables_after = None

    async def cut_and_restore(link: str) -> None:
        nonlocal mid, cut_seconds, cut_at, restored_at
        async with NicProgress(fn, s_host.nic, d_host.nic) as progress:
            mid_counts = await progress.until_sent(before, packets // 2, seconds * 2 + 20)
            cut_at = time.time()
            rep = await set_link(fn.topo, fn.inventory, link, down=True, nodes=fn.net.nameToNode)
            cut_seconds = rep.seconds
            mid = {n: {**before[n], **mid_counts[n]} for n in nics}
            say(f"  cut {rep.link} after {progress.sent(mid_counts, before)} packets: {rep.cable}; "
                "no table written (the endpoints find the dead paths)")
            await progress.until_sent(before, packets * 3 // 4, seconds * 2 + 20)
            restored_at = time.time()
            rep = await set_link(fn.topo, fn.inventory, link, down=False, nodes=fn.net.nameToNode)
            say(f"  restored {rep.link} at three quarters: {rep.cable}")

    with tempfile.TemporaryDirectory(prefix="mrc-demo-") as tmp:
        t = Transfer(fn, src, dst, nbytes, Path(tmp), timeout=seconds * 4 + 30,
                     send_args=["--rate", str(pps), "--rto-min", "0.4"], recv_args=["--nack-delay", "0.1"])
        try:
            if cut is not None:
                tables_before = asyncio.run(fabric_tables(fn))
            t.start()
            if cut is not None:
                asyncio.run(cut_and_restore(cut))
            result = t.wait()
        finally:
            t.kill()
            if cut is not None and cut in fn.inventory.down:
                asyncio.run(set_link(fn.topo, fn.inventory, cut, down=False))
    after = asyncio.run(_read(fn, nics))
    if cut is None:
        mid = after  # one phase: the whole transfer is "before"
    else:
        tables_after = asyncio.run(fabric_tables(fn))
    first, second = delta(mid, before), delta(after, mid)
    crossing = sorted(p.ev for p in paths(fn.topo, s_host, d_host) if cut is not None and cut in p.links)
    events = result.sender.get("ev_events", [])
    t0 = result.sender.get("started_at_unix", 0.0)
    down_t = (cut_at - t0, restored_at - t0) if cut_at is not None and restored_at is not None else None
    back = [e for e in events if e["event"] in ("recovered", "restored") and e["ev"] in crossing]
    return FlowResult(
        src, dst, nbytes, result.ok, result.sender, len(evs),
        _plane_counts(first[s_host.nic], "NicEgress.plane_tx"), _plane_counts(second[s_host.nic], "NicEgress.plane_tx"),
        _plane_counts(first[d_host.nic], "NicIngress.plane_rx"), _plane_counts(second[d_host.nic], "NicIngress.plane_rx"),
        cut, cut_seconds,
        None if tables_before is None else tables_before == tables_after, result.errors, crossing,
        sorted({e["ev"] for e in events if e["event"] == "retired"}),
        sorted({e["ev"] for e in back if down_t and e["t"] >= down_t[1]}),
        sorted({e["ev"] for e in back if down_t and down_t[0] <= e["t"] < down_t[1]}))


def flow_ok(flow: FlowResult, planes: int) -> bool:
    """Did the transfer do what the fabric promises? Every byte verified and every plane
    carried packets; with a cut also: the fabric tables read back unchanged (None, not
    read, is no proof), some plane still carried packets after it, and no EV that avoids
    the cut cable was retired."""
    if not flow.verified or not all(flow.planes_before.get(p, 0) > 0 for p in range(planes)):
        return False
    if flow.cut is None:
        return True
    after = any(flow.planes_after.get(p, 0) > 0 for p in range(planes))
    return flow.fabric_unchanged is True and after and not flow.healthy_retired


def format_flow(flow: FlowResult, planes: int, paths_line: str, path_lines: Sequence[str] = ()) -> list[str]:
    """The demo's summary lines of one transfer (``paths_line``: the spines' per-path
    counts in one line; ``path_lines``: each path's, printed under it)."""
    r = flow.report
    retx = r.get("retransmissions", {})
    goodput = (r.get("goodput_bps") or 0) / 1e6
    phase = " before the cut" if flow.cut else ""
    lines = [f"MRC-lite transfer {flow.src} -> {flow.dst}: {flow.nbytes:,} bytes, "
             + ("every byte verified (SHA-256)" if flow.verified else "NOT verified")
             + (f" in {r['completion_time_s']:.2f} s ({goodput:.1f} Mb/s)" if r.get("completion_time_s") else ""),
             f"  {r.get('packets_sent', 0)} data packets over {flow.evs} EVs, {retx.get('total', 0)} retransmitted "
             f"({retx.get('timeout', 0)} timeout, {retx.get('nack', 0)} NACK, {retx.get('trim_nack', 0)} trim NACK), "
             f"{r.get('evs_retired', 0)} EVs retired, {r.get('evs_recovered', 0)} recovered",
             f"  per-plane split (source NIC's counters){phase}: {format_split(planes, flow.planes_before)}",
             f"  received per plane (destination NIC's counters){phase}: {format_split(planes, flow.delivered_before)}",
             f"  paths {paths_line}", *(f"    {ln}" for ln in path_lines)]
    lines += [f"  error: {e}" for e in flow.errors[-2:] if not flow.verified]
    if flow.cut:
        lines += [f"  after cutting {flow.cut}: {format_split(planes, flow.planes_after)}",
                  f"  cable cut, no table written; "
                  f"fabric tables {'unchanged' if flow.fabric_unchanged else 'CHANGED'} (read back before and after); "
                  "cable restored at three quarters",
                  f"  EVs retired {len(flow.retired)} of {len(flow.crossing)} across the cut (healthy EVs retired "
                  f"{len(flow.healthy_retired)}), recovered while down {len(flow.recovered_while_down)}, "
                  f"recovered after the restore {len(flow.recovered_after_restore)}"]
    return lines


def format_split(planes: int, counts: dict[int, int]) -> str:
    total = sum(counts.values())
    parts = []
    for p in range(planes):
        n = counts.get(p, 0)
        parts.append(f"plane {p}: {n}" + (f" ({100 * n / total:.0f}%)" if total else ""))
    return ", ".join(parts)
